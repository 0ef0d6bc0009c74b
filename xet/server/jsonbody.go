package server

import (
	"encoding/json"
	"io"
	"net/http"
)

// decodeJSONBody decodes r's body, at most limit bytes, into v, and reads what follows the JSON
// value to the body's end (git-lfs's encoder ends it with a newline) before the caller answers. A
// Go reverse proxy in front of the server (net/http/httputil, Caddy, Traefik) stops forwarding a
// request body once the answer's header has gone back, and its transport then closes the
// connection in the middle of the answer: the client sees its answer cut off. An error of the
// decode or of the rest (*http.MaxBytesError past limit) is returned as is.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body := http.MaxBytesReader(w, r.Body, limit)
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return err
	}
	// The decoder may have buffered past the value; the rest is read from the body itself, within
	// the same limit, whatever it holds (liberal: trailing bytes are not the request's).
	_, err := io.Copy(io.Discard, body)
	return err
}
