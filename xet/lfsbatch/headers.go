package lfsbatch

// Names of the X-Xet-* headers: those of a xet batch action (XetAction) and those our client and
// server add to CAS requests. HTTP matches header names case-insensitively; so does ParseXetAction.
const (
	HeaderCasURL          = "X-Xet-Cas-Url"
	HeaderAccessToken     = "X-Xet-Access-Token"
	HeaderTokenExpiration = "X-Xet-Token-Expiration" // unix seconds
	HeaderSessionID       = "X-Xet-Session-Id"       // also sent on every CAS request of a session
	HeaderXetHash         = "X-Xet-Hash"             // the Xet file hash of a download
	// HeaderVerifiesSHA256, "true" in our server's LFS batch actions, promises that the CAS reads
	// back every file a shard registers and refuses the shard unless the content's SHA-256 is the
	// one the shard claims. A client may then claim the LFS oid without hashing the file itself: a
	// wrong oid still fails the upload, on the server. The Hub does not send it.
	HeaderVerifiesSHA256 = "X-Xet-Verifies-Sha256"
	// HeaderSHA256Verified, "true" in our server's download actions, says that the Xet file the
	// action names (HeaderXetHash) was hashed to the object's oid when it was registered: not a
	// mapping an older store wrote without checking. The agent then leaves the SHA-256 of the
	// download to git-lfs, which hashes every file a custom adapter hands it anyway; a server that
	// says it falsely still cannot get a wrong file past git-lfs. The Hub does not send it.
	HeaderSHA256Verified = "X-Xet-Sha256-Verified"
	// HeaderXorbFollows, on a xorb upload, is a hint from our client: "first" when the xorb's raw
	// bytes begin a file, or the hash of the xorb whose raw bytes they continue in a file (every
	// chunk of both, in order). Our server uses it to hash files' SHA-256 as their xorbs arrive;
	// other servers ignore it.
	HeaderXorbFollows = "X-Xet-Follows"
	// HeaderBatchURL, in our server's xet batch actions (not the Hub's), names the listing of the
	// batch answer the action belongs to: {cas}/v1/batches/{id}, read with the answer's CAS token
	// (casapi.BatchListing). An agent given one object of the answer may fetch the listing and
	// work on every object in it at once (agent/leader); a client that ignores it loses nothing.
	HeaderBatchURL = "X-Xet-Batch-Url"

	// headerPrefix begins every X-Xet-* name; an action's other headers are credentials for href.
	headerPrefix = "x-xet-"
)
