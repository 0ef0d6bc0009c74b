package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pa55@host/x.git/info/lfs":           "https://user:xxxxx@host/x.git/info/lfs",
		"https://host/o?X-Amz-Signature=abc&b=1#frag":     "https://host/o",
		"https://ghp_TOKEN@host/x":                        "https://xxxxx@host/x",
		"ssh://git@host/x":                                "ssh://git@host/x",
		"http://127.0.0.1:9/x?":                           "http://127.0.0.1:9/x",
		"origin":                                          "origin",
		"/srv/repos/m.git":                                "/srv/repos/m.git",
		"https://us er:pa55@host/%zz?sig=abc":             "https://…",
		"ssh://git:pa55@host:22/org/m":                    "ssh://git:xxxxx@host:22/org/m",
		"https://u:p%40ss@host/x?token=t":                 "https://u:xxxxx@host/x",
		"https://host/cdn?Signature=s%2Fg&Key-Pair-Id=k1": "https://host/cdn",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Text finds URLs in an error message or a JSON log line, ending each at a quote, a backslash or
// white space.
func TestText(t *testing.T) {
	in := `{"error":"downloading from http://carol:casPW@127.0.0.1:1/cas?sig=SIG: remote \"https://a:remotePW@h/r.git\" (see https://h/doc)"}`
	got := Text(in)
	for _, s := range []string{"casPW", "SIG", "remotePW"} {
		if strings.Contains(got, s) {
			t.Errorf("Text left %s: %s", s, got)
		}
	}
	for _, s := range []string{`http://carol:xxxxx@127.0.0.1:1/cas:`, `\"https://a:xxxxx@h/r.git\"`, "(see https://h/doc)"} {
		if !strings.Contains(got, s) {
			t.Errorf("Text lost %q: %s", s, got)
		}
	}
	if s := "no url here: a:b@c"; Text(s) != s {
		t.Errorf("Text changed %q", s)
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := Writer(&b)
	line := `{"remote":"https://u:pw@h/r?t=1"}` + "\n"
	if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != `{"remote":"https://u:xxxxx@h/r"}`+"\n" {
		t.Errorf("wrote %q", got)
	}
}

func TestSecrets(t *testing.T) {
	basic := "Basic " + "dXNlcjpoZl9zZWNyZXRUT0tFTg==" // user:hf_secretTOKEN
	text := "echo: Bearer hf_secretTOKEN / " + basic + " / hf_secretTOKEN / dXNlcjpoZl9zZWNyZXRUT0tFTg== / ok"
	got := Secrets(text, "Bearer hf_secretTOKEN", basic, "", "x y")
	if strings.Contains(got, "hf_secretTOKEN") || strings.Contains(got, "dXNlcjpo") || !strings.HasSuffix(got, " / ok") {
		t.Errorf("Secrets(...) = %q", got)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"weights/model.bin":        "weights/model.bin",
		"données/模型 v2.bin":        "données/模型 v2.bin",
		"a\tb":                     "a\tb",
		"evil\x1b]52;c;aGk=\a.bin": `"evil\x1b]52;c;aGk=\a.bin"`,
		"line\nFAKE OK":            `"line\nFAKE OK"`,
		"bad\xffutf8":              `"bad\xffutf8"`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %s, want %s", in, got, want)
		}
	}
}
