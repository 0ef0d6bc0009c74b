package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// The lines before the log's settings are known are held, bounded, and written (those the level
// lets through) once the first line at info or above resolves them; the settings are read once.
func TestHeldLogResolvesOnFirstInfoLine(t *testing.T) {
	var out bytes.Buffer
	resolved := 0
	h := &heldLog{
		resolve: func() (io.Writer, zerolog.Level, func()) { resolved++; return &out, zerolog.DebugLevel, func() {} },
		atExit:  func() (io.Writer, zerolog.Level, func()) { t.Fatal("atExit after resolve"); return nil, 0, nil },
	}
	log := zerolog.New(h)
	for i := 0; i < 200; i++ {
		log.Debug().Int("i", i).Msg("start-up")
	}
	if resolved != 0 || out.Len() != 0 {
		t.Fatalf("debug lines resolved the settings (%d) or were written: %q", resolved, out.String())
	}
	log.Info().Msg("first info")
	log.Debug().Msg("after")
	h.Resolve()
	h.Close()
	got := out.String()
	if resolved != 1 || !strings.Contains(got, `"i":199`) || strings.Contains(got, `"i":0,`) || !strings.Contains(got, "first info") || !strings.Contains(got, "after") {
		t.Fatalf("resolved %d times; wrote %q", resolved, got)
	}
	if held := strings.Count(got, "start-up"); held*len(`{"level":"debug","i":199,"message":"start-up"}`+"\n") > heldLogBytes {
		t.Errorf("%d start-up lines held, more than %d bytes", held, heldLogBytes)
	}
}

// A process that ends unresolved never reads the settings: its held lines go where atExit says
// (heldLogger: the environment's log when it asked for debug, else nowhere).
func TestHeldLogAtExit(t *testing.T) {
	for _, c := range []struct {
		env  environment
		want string
	}{
		{environment{}, ""},
		{environment{LogLevel: "info"}, ""},
		{environment{LogLevel: "DEBUG"}, "DBG start-up"},
	} {
		var stderr bytes.Buffer
		cfg := func(name, key string) string { t.Fatalf("%+v: read %s at exit", c.env, key); return "" }
		log, _, closeLog := heldLogger(c.env, cfg, &stderr)
		log.Debug().Msg("start-up")
		closeLog()
		if got := stderr.String(); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: stderr %q, want %q", c.env, got, c.want)
		}
	}
}
