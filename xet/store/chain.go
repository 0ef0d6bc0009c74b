package store

import (
	"crypto/sha256"
	"encoding"
	"hash"

	xhash "github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// The SHA-256 check of a registration (checkSHA256s) reads every new file back from its xorbs. On a
// server that writes xorbs with O_DIRECT that is a disk read of the whole push at its very end,
// while the clients wait. Our client says, with each xorb, where its raw bytes sit in a file
// (xorb.Follows); the store then hashes them as the xorb is validated, continuing the SHA-256 of
// the xorb it follows, and keeps the state. The check starts from the state of the longest run of
// the file's first terms that it covers, and reads only the rest.
//
// A state is used only for exactly the bytes it hashed: its id chains the hashes of the xorbs it
// went over (chainID), and a term counts only when it spans its whole xorb and the xorb's state
// has the id of the run so far. A wrong or stale hint costs a read, never a wrong answer.

// chainState is the SHA-256 state after the raw bytes of a run of xorbs, the last one keyed.
type chainState struct {
	id     xhash.Hash // chainID of the run
	chunks int        // the last xorb's chunk count
	state  []byte     // sha256 state (encoding.BinaryMarshaler)
}

// chainStates bounds the states kept: about 200 bytes each.
const chainStates = 4 << 20

// chainID names a run: the run named prev (zero: none) followed by xorb x.
func chainID(prev, x xhash.Hash) xhash.Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(x[:])
	return xhash.Hash(h.Sum(nil))
}

// chainHasher returns the hasher to feed xorb x's raw bytes to under hint f, and the id of the run
// it extends; nil when the hint names nothing known.
func (s *Store) chainHasher(f xorb.Follows) (hash.Hash, xhash.Hash) {
	h := sha256.New()
	switch {
	case f.Start:
		return h, xhash.Hash{}
	case f.Prev != xhash.Hash{}:
		prev, ok := s.chains.get(f.Prev)
		if !ok || h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.state) != nil {
			return nil, xhash.Hash{}
		}
		return h, prev.id
	}
	return nil, xhash.Hash{}
}

// keepChain records the state of a run ending with xorb x (validated, chunks chunks).
func (s *Store) keepChain(x xhash.Hash, prevID xhash.Hash, chunks int, h hash.Hash) {
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return
	}
	s.chains.put(x, &chainState{id: chainID(prevID, x), chunks: chunks, state: st})
}

// chainPrefix returns a SHA-256 hasher holding the state after the longest run of rec's first
// terms that kept states cover, and how many terms that is (0: a fresh hasher).
func (s *Store) chainPrefix(rec *fileRecord) (hash.Hash, int) {
	h := sha256.New()
	var id xhash.Hash
	var last *chainState
	n := 0
	for _, t := range rec.Terms {
		st, ok := s.chains.get(t.Xorb)
		if !ok || t.Start != 0 || int(t.End) != st.chunks || st.id != chainID(id, t.Xorb) {
			break
		}
		id, last, n = st.id, st, n+1
	}
	if last == nil || h.(encoding.BinaryUnmarshaler).UnmarshalBinary(last.state) != nil {
		return sha256.New(), 0
	}
	return h, n
}
