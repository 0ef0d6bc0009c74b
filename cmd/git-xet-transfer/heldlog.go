package main

import (
	"io"
	"slices"
	"sync"

	"github.com/rs/zerolog"
)

// heldLogBytes bounds the lines a heldLog holds before its settings are known: the start-up lines
// of a process fit; beyond it the oldest are dropped.
const heldLogBytes = 4 << 10

// heldLog is the agent's log output while its settings (xet.logfile, xet.loglevel) are not known:
// reading them runs git, which a process git-lfs starts and never sends a request must not do. It
// holds the lines written until then (debug lines, at most heldLogBytes) and resolves the settings
// (resolve: the writer and level, and what closes the writer) on the first line at info level or
// above, or when the first request comes (Resolve), then writes the held lines that pass the level
// and every later one there.
//
// A process that ends unresolved (it got no request and logged nothing at info or above) resolves
// with the environment alone (atExit: no git): its held lines are written only when the
// environment asked for debug (GIT_XET_LOG_LEVEL), to GIT_XET_LOG or else stderr; otherwise they
// are dropped.
type heldLog struct {
	resolve, atExit func() (io.Writer, zerolog.Level, func())

	mu       sync.Mutex
	out      io.Writer // nil until resolved
	level    zerolog.Level
	closeOut func()
	held     []heldLine
	size     int
}

type heldLine struct {
	level zerolog.Level
	p     []byte
}

// Write implements io.Writer (a line without a level).
func (w *heldLog) Write(p []byte) (int, error) { return w.WriteLevel(zerolog.NoLevel, p) }

// WriteLevel implements zerolog.LevelWriter.
func (w *heldLog) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.out == nil && l < zerolog.InfoLevel {
		w.hold(l, p)
		return len(p), nil
	}
	w.resolveLocked(w.resolve)
	if l < w.level {
		return len(p), nil
	}
	return w.out.Write(p)
}

// hold keeps a copy of p (zerolog reuses its buffers), dropping the oldest lines beyond
// heldLogBytes.
func (w *heldLog) hold(l zerolog.Level, p []byte) {
	w.held = append(w.held, heldLine{l, slices.Clone(p)})
	w.size += len(p)
	for w.size > heldLogBytes && len(w.held) > 0 {
		w.size -= len(w.held[0].p)
		w.held = w.held[1:]
	}
}

// Resolve reads the settings now (the first request has come), unless they are known already.
func (w *heldLog) Resolve() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resolveLocked(w.resolve)
}

func (w *heldLog) resolveLocked(resolve func() (io.Writer, zerolog.Level, func())) {
	if w.out != nil {
		return
	}
	w.out, w.level, w.closeOut = resolve()
	for _, h := range w.held {
		if h.level >= w.level {
			_, _ = w.out.Write(h.p)
		}
	}
	w.held, w.size = nil, 0
}

// Close resolves with atExit when the settings were never needed, and closes the output.
func (w *heldLog) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resolveLocked(w.atExit)
	w.closeOut()
}
