package lfsbatch

// Request is the body of POST {lfs url}/objects/batch.
type Request struct {
	Operation string   `json:"operation"`           // "upload" or "download"
	Transfers []string `json:"transfers,omitempty"` // the transfers the client offers; absent means basic
	Ref       *Ref     `json:"ref,omitempty"`
	Objects   []Object `json:"objects"`
	HashAlgo  string   `json:"hash_algo,omitempty"` // absent means sha256
}

// Ref is the ref a batch request pushes to or fetches from.
type Ref struct {
	Name string `json:"name"`
}

// Object is an object of a batch request: its LFS oid (SHA-256, lowercase hex) and size.
type Object struct {
	OID  string `json:"oid"`
	Size int64  `json:"size"`
}

// Response is the answer to a batch request.
type Response struct {
	Transfer string   `json:"transfer,omitempty"` // the transfer chosen; absent means basic
	Objects  []Result `json:"objects"`
	HashAlgo string   `json:"hash_algo,omitempty"`
}

// Result is one object of a batch answer: its actions (none when an upload is already stored), or
// its error.
type Result struct {
	OID           string             `json:"oid"`
	Size          int64              `json:"size"`
	Authenticated bool               `json:"authenticated,omitempty"`
	Actions       map[string]*Action `json:"actions,omitempty"` // by name: "upload", "verify", "download"
	Error         *ObjectError       `json:"error,omitempty"`
}

// Action is what a client does for one object: a request to Href with Header. For the xet transfer
// Href is the CAS token refresh route and Header carries the CAS (XetAction).
type Action struct {
	Href      string            `json:"href"`
	Header    map[string]string `json:"header,omitempty"`
	ExpiresIn int64             `json:"expires_in,omitempty"` // seconds from the answer
	// ExpiresAt (RFC 3339) is kept as text: servers that send it differ in its form, and a form
	// this package does not parse must not fail the whole answer.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// ObjectError is one object's error in a batch answer (code: an HTTP status).
type ObjectError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
