package main

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/summary"
)

// showSummary writes the run's summary line to the user's terminal (internal/summary.Print says
// when there is one) at the end of the agent, once the leader has closed what it served: only a
// process that completed transfers has figures (a process whose conversation the leader served
// has none, so one line covers the run), and none is written after an interruption or when
// xet.summary is false (git config, read as git-lfs reads it, from the snapshot the first request
// loaded). With sharing off (GIT_XET_SHARE=0, or where agent/share has no socket: macOS) each
// process that completed transfers has figures of its own, and prints its own line.
func showSummary(ctx context.Context, g client.Git, t *summary.Tally, log zerolog.Logger) {
	tot := t.Totals()
	if tot.Files == 0 || ctx.Err() != nil {
		return
	}
	if on, err := gitrepo.Open(g.Dir).Bool(ctx, "xet.summary", true); err != nil || !on {
		return
	}
	line := summary.Line(tot)
	if err := summary.Print(line); err != nil {
		log.Debug().Err(err).Str("line", line).Msg("summary not shown")
		return
	}
	log.Debug().Str("line", line).Msg("summary shown")
}
