package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/leader"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
	"github.com/git-xet-transfer/git-xet-transfer/internal/proctree"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/internal/summary"
)

// runAgent is the transfer agent git-lfs starts (no arguments, or `transfer`): the protocol on
// stdin/stdout, logs on stderr (shown by git-lfs under GIT_TRACE=1) or in the file named by
// GIT_XET_LOG or `git config xet.logfile`.
func runAgent(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "git-xet-transfer transfer: takes no arguments (got %q)\n", strings.Join(args, " "))
		return 2
	}
	// Ctrl-C or SIGTERM ends ctx, which stops every transfer this process runs or serves; a
	// second signal then ends the process at once, as it would any program.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)

	g := client.Git{}
	env := readEnvironment(os.Getenv, os.Environ())
	ho, err := takeHandover(&env)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer: %v\n", err)
		return 1
	}
	cfg := agentConfig(ctx, g, env)
	log, resolveLog, closeLog := heldLogger(env, cfg, stderr)
	defer closeLog()
	defer profile(env.CPUProfile, log)()
	defer stopLeftPrograms(log)
	for _, p := range env.Problems {
		log.Warn().Msg(p)
	}

	var tally summary.Tally // what this process did for the run: the summary line's figures
	o := env.clientOptions()
	o.Log, o.Git, o.SetProcs, o.Tally = log, g, true, &tally
	o.StoreDir = func() string { return cfg("GIT_XET_STORE", "xet.store") }
	in, out, pipes := agentIO(stdin, stdout)
	open := leader.New(leader.Options{Log: log, NoShare: env.NoShare, SetProcs: true, Completed: func(upload bool, obj agent.Object, res agent.Result) {
		tally.Transfer(upload, obj.Size, res.DedupedBytes, res.NewBytes)
	}}, func(init agent.Init, co client.Coordinator) leader.Client {
		return client.Open(o, init, co)
	})
	err = agent.Run(ctx, in, out, agent.Options{
		Open:  open,
		Log:   log,
		Pipes: pipes,
		// The settings from git config (the log's, xet.store) are read from here on, not before: a
		// process given no request runs no git.
		FirstRequest: resolveLog,
		Ahead:        ho.Ahead,
		InitAnswered: ho.InitAnswered,
	})
	if err != nil {
		log.Error().Err(err).Msg("agent stopped")
		fmt.Fprintf(stderr, "git-xet-transfer: %v\n", err)
		return 1
	}
	showSummary(ctx, g, &tally, log)
	return 0
}

// stopLeftPrograms ends the programs this process started and no longer waits for (a credential
// helper at a prompt, ssh: git-lfs runs them without a context, internal/proctree) before it exits,
// so that a stopped command leaves nothing running. It is deferred after the log is opened: it
// runs before the log closes, once nothing of the command waits for a program any more.
func stopLeftPrograms(log zerolog.Logger) {
	if n := proctree.Stop(500 * time.Millisecond); n > 0 {
		log.Info().Int("processes", n).Msg("stopped the programs this process left running (a credential helper, ssh)")
	}
}

// takeHandover takes the hand-over git-xet-transfer-agent names in the environment (none: the zero
// Handover): it reads the bytes and closes the descriptor (or removes the file) they came in, and
// removes the variable, before this process starts any other program. The bytes hold request lines,
// whose action headers may carry credentials: no program this one starts is given them.
func takeHandover(env *environment) (handover.Handover, error) {
	if env.Handover == "" {
		return handover.Handover{}, nil
	}
	os.Unsetenv(handover.Var)
	env.Credentials.OS = os.Environ()
	return handover.Decode(env.Handover)
}

// agentConfig returns a lookup of the agent's settings that prefers the environment variable when
// it is set, else reads the process's config snapshot (one git call on the first such lookup, which
// the agent's later lookups share; none while the environment answers).
func agentConfig(ctx context.Context, g client.Git, env environment) func(name, key string) string {
	repo := gitrepo.Open(g.Dir)
	vars := map[string]string{"GIT_XET_STORE": env.Store, "GIT_XET_LOG": env.Log, "GIT_XET_LOG_LEVEL": env.LogLevel}
	return func(name, key string) string {
		if v := vars[name]; v != "" {
			return v
		}
		// A configuration that cannot be read (no repository here, or the agent stopped) reads as
		// nothing set: the defaults, and the request that needs the repository says what failed.
		v, _, _ := repo.Get(ctx, key)
		return v
	}
}

// agentLogger returns the agent's logger: to the file GIT_XET_LOG / xet.logfile when set (JSON
// lines, appended; several agent processes may share it), else to stderr in a compact text form.
// The level is GIT_XET_LOG_LEVEL / xet.loglevel (debug, info, warn, error; default info in a log
// file, warn on stderr: git-lfs shows an agent's stderr only with GIT_TRACE, and a line per object
// there costs a push of many small files a noticeable part of the agents' CPU).
func agentLogger(cfg func(env, key string) string, stderr io.Writer) (zerolog.Logger, func()) {
	w, level, closeLog := logOutput(cfg, stderr)
	return zerolog.New(w).Level(level).With().Timestamp().Int("pid", os.Getpid()).Logger(), closeLog
}

// heldLogger is agentLogger for the transfer agent, which must run no git before its first request:
// when the environment names both the log file and the level it is agentLogger; else the settings
// git config may give are read on the first line at info or above, or at resolve (the first
// request), and the lines before are held (heldLog, which says what becomes of them at exit).
func heldLogger(env environment, cfg func(env, key string) string, stderr io.Writer) (log zerolog.Logger, resolve, closeLog func()) {
	if env.Log != "" && env.LogLevel != "" {
		log, closeLog = agentLogger(cfg, stderr)
		return log, func() {}, closeLog
	}
	floor, err := zerolog.ParseLevel(strings.ToLower(env.LogLevel))
	if env.LogLevel == "" || err != nil {
		floor = zerolog.TraceLevel
	}
	envOnly := func(name, key string) string {
		return map[string]string{"GIT_XET_LOG": env.Log, "GIT_XET_LOG_LEVEL": env.LogLevel}[name]
	}
	h := &heldLog{
		resolve: func() (io.Writer, zerolog.Level, func()) { return logOutput(cfg, stderr) },
		atExit: func() (io.Writer, zerolog.Level, func()) {
			if env.LogLevel != "" && floor <= zerolog.DebugLevel {
				return logOutput(envOnly, stderr)
			}
			return io.Discard, zerolog.Disabled, func() {}
		},
	}
	log = zerolog.New(h).Level(floor).With().Timestamp().Int("pid", os.Getpid()).Logger()
	return log, h.Resolve, h.Close
}

// logOutput is where agentLogger writes (JSON lines: a log file's, or a ConsoleWriter on stderr),
// the level, and what closes the output. Every line goes through redact.Writer: a URL no call site
// redacted loses its password and its query before it is kept.
func logOutput(cfg func(env, key string) string, stderr io.Writer) (io.Writer, zerolog.Level, func()) {
	level, explicit := zerolog.InfoLevel, false
	lv := cfg("GIT_XET_LOG_LEVEL", "xet.loglevel")
	if lv != "" {
		if l, err := zerolog.ParseLevel(strings.ToLower(lv)); err == nil {
			level, explicit = l, true
		} else {
			fmt.Fprintf(stderr, "git-xet-transfer: ignoring log level %q (want debug, info, warn or error)\n", lv)
		}
	}
	if path := cfg("GIT_XET_LOG", "xet.logfile"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			return redact.Writer(f), level, func() { f.Close() }
		}
		fmt.Fprintf(stderr, "git-xet-transfer: cannot open log file %s (%v); logging to stderr\n", path, err)
	}
	if !explicit {
		level = zerolog.WarnLevel
	}
	return zerolog.ConsoleWriter{Out: redact.Writer(stderr), NoColor: true, TimeFormat: time.TimeOnly}, level, func() {}
}

// profile starts a CPU profile of this agent process when dir (GIT_XET_CPUPROFILE) is set
// (test/small-files.sh uses it): dir/cpu.<pid>.pprof, and an allocation profile dir/mem.<pid>.pprof,
// written when the returned function runs. The allocation profile keeps Go's default sampling
// (one sample per 512 KiB allocated): a finer rate puts a stack walk on most small allocations,
// and the CPU profile beside it then shows that walk (17 % of a 50,000-file push at 4 KiB)
// instead of the work.
func profile(dir string, log zerolog.Logger) func() {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu.%d.pprof", os.Getpid())))
	if err != nil {
		log.Warn().Err(err).Msg("cpu profile not written")
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		log.Warn().Err(err).Msg("cpu profile not written")
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if m, err := os.Create(filepath.Join(dir, fmt.Sprintf("mem.%d.pprof", os.Getpid()))); err == nil {
			pprof.Lookup("allocs").WriteTo(m, 0)
			m.Close()
		}
	}
}
