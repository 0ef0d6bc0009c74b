package credentials

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
)

// hubOrigins are the Hub's own origins. Not their subdomains: cdn-lfs.huggingface.co,
// cas-bridge.xethub.hf.co and the like serve signed URLs and need no token, and a host under
// hf.space is anyone's Space.
var hubOrigins = []string{"https://huggingface.co:443", "https://hf.co:443"}

// origin is scheme://host:port of an absolute http(s) URL, lower-cased, with the scheme's default
// port filled in; "" for anything else.
func origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return ""
	case port == "" && scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// IsHub reports whether rawURL is on the Hugging Face Hub, the only place the Hugging Face
// credentials go: https://huggingface.co, https://hf.co, or the origin of HF_ENDPOINT (scheme,
// host and port, exactly). Plain http to huggingface.co is not the Hub: a token sent there would
// cross the network in clear.
func (e Env) IsHub(rawURL string) bool {
	o := origin(rawURL)
	switch {
	case o == "":
		return false
	case slices.Contains(hubOrigins, o):
		return true
	default:
		return e.HFEndpoint != "" && origin(strings.TrimSpace(e.HFEndpoint)) == o
	}
}

// sameService reports whether a credential of the origin of a may go to b: the same origin, or
// both are the Hub's own names (its batch answers on hf.co may name routes on huggingface.co).
func sameService(a, b string) bool {
	oa, ob := origin(a), origin(b)
	if oa == "" || ob == "" {
		return false
	}
	return oa == ob || (slices.Contains(hubOrigins, oa) && slices.Contains(hubOrigins, ob))
}

// For is the credential of a request to rawURL: Get's when rawURL is at the origin the credential
// belongs to (the LFS endpoint's; for SSH remotes the href git-lfs-authenticate answered), else
// none, without resolving anything. A URL an LFS server names on another host (a CDN, a token
// route, a CAS) gets none of the user's credentials: that host was not what the user configured.
// ok is false for such a URL.
func (r *Resolver) For(ctx context.Context, rawURL string) (c Credential, ok bool, err error) {
	home, err := r.home(ctx)
	if err != nil {
		return Credential{}, false, err
	}
	if !sameService(home, rawURL) {
		return Credential{}, false, nil
	}
	c, err = r.Get(ctx)
	return c, err == nil, err
}

// home is the URL whose origin the credential belongs to: the LFS endpoint, or for an SSH remote
// the href git-lfs-authenticate answers.
func (r *Resolver) home(ctx context.Context) (string, error) {
	if r.SSH() {
		return r.LFSURL(ctx)
	}
	return r.endpoint.Url, nil
}
