package summary

import (
	"io"
	"net/http"
)

// Transport returns rt counting into t the body bytes of each request that rt reads (sent) and of
// each answer the caller reads (received): what went over the network, retries included, headers
// not.
func (t *Tally) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return countingTransport{rt: rt, t: t}
}

type countingTransport struct {
	rt http.RoundTripper
	t  *Tally
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		r := req.Clone(req.Context())
		r.Body = &countingBody{ReadCloser: req.Body, n: c.t.sent.Add}
		req = r
	}
	res, err := c.rt.RoundTrip(req)
	if res != nil && res.Body != nil {
		res.Body = &countingBody{ReadCloser: res.Body, n: c.t.received.Add}
	}
	return res, err
}

// countingBody adds each read's byte count through n.
type countingBody struct {
	io.ReadCloser
	n func(int64) int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	if k > 0 {
		b.n(int64(k))
	}
	return k, err
}
