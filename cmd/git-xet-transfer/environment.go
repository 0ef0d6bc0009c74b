package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/internal/handover"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/rs/zerolog"
)

// environment is every environment variable git-xet-transfer reads, read here and only here: the
// packages below the command are given values (client.Options, localshards.Dirs, the credential
// sources), never the environment. Each is listed in the README's Configuration table
// (TestEnvironmentDocumented). Variables that git-lfs's own packages read for themselves (proxies,
// GIT_SSH, git's) are theirs.
type environment struct {
	Store, Log, LogLevel, CPUProfile string // GIT_XET_STORE, GIT_XET_LOG, GIT_XET_LOG_LEVEL, GIT_XET_CPUPROFILE
	StallTimeout                     time.Duration
	Concurrency                      int
	NoShare, DirectIO                bool
	Ref                              string
	CacheDirs                        localshards.Dirs
	CacheSizeLimit, CacheMaxEntries  int64
	Credentials                      credentials.Env // HF_TOKEN, HF_TOKEN_PATH, HF_HOME, HF_ENDPOINT, HOME and the whole environment
	HFEndpoint                       string
	// Handover is GIT_XET_TRANSFER_HANDOVER, set by git-xet-transfer-agent when it hands its
	// conversation with git-lfs to this program: where the bytes are (internal/handover), never
	// the bytes themselves; never logged.
	Handover string

	// Problems are values that could not be used (named, with what was wanted); the defaults hold.
	Problems []string
}

// readEnvironment reads the environment through getenv (os.Getenv, or a test's map); environ is
// the whole environment (os.Environ), which git-lfs's packages are given for the variables they
// read themselves.
func readEnvironment(getenv func(string) string, environ []string) environment {
	home := homeDir(getenv)
	e := environment{
		Store:      getenv("GIT_XET_STORE"),
		Log:        getenv("GIT_XET_LOG"),
		LogLevel:   getenv("GIT_XET_LOG_LEVEL"),
		CPUProfile: getenv("GIT_XET_CPUPROFILE"),
		NoShare:    getenv("GIT_XET_SHARE") == "0",
		DirectIO:   getenv("GIT_XET_DIRECT_IO") == "1",
		Ref:        getenv("GIT_XET_REF"),
		CacheDirs: localshards.Dirs{HFXetCache: getenv("HF_XET_CACHE"), HFHome: getenv("HF_HOME"),
			XDGCacheHome: getenv("XDG_CACHE_HOME"), Home: home},
		Credentials: credentials.Env{HFToken: getenv("HF_TOKEN"), HFTokenPath: getenv("HF_TOKEN_PATH"), HFHome: getenv("HF_HOME"),
			HFEndpoint: getenv("HF_ENDPOINT"), Home: home, OS: environ},
		HFEndpoint: strings.TrimRight(getenv("HF_ENDPOINT"), "/"),
		Handover:   getenv(handover.Var),
	}
	if v := getenv("GIT_XET_STALL_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			e.StallTimeout = d
		} else {
			e.problem("GIT_XET_STALL_TIMEOUT", v, "a positive Go duration such as 30s")
		}
	}
	if v := getenv("GIT_XET_CONCURRENCY"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			e.Concurrency = n
		} else {
			e.problem("GIT_XET_CONCURRENCY", v, "a positive number")
		}
	}
	if v := getenv("HF_XET_SHARD_CACHE_SIZE_LIMIT"); strings.TrimSpace(v) != "" {
		if n, err := localshards.ParseSize(v); err == nil {
			e.CacheSizeLimit = n
		} else {
			e.problem("HF_XET_SHARD_CACHE_SIZE_LIMIT", v, "a byte count with an optional unit (KB, MB, GB, TB, KiB … TiB)")
		}
	}
	if v := getenv("HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE"); v != "" {
		if n, err := localshards.ParseSize(v); err == nil && n > 0 {
			e.CacheMaxEntries = n
		} else {
			e.problem("HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE", v, "a positive entry count")
		}
	}
	return e
}

func (e *environment) problem(name, value, want string) {
	e.Problems = append(e.Problems, fmt.Sprintf("ignoring %s=%q: want %s", name, value, want))
}

// homeDir is $HOME, else what the system says (os.UserHomeDir: %USERPROFILE% on Windows).
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// clientOptions are the Xet client's options that come from the environment.
func (e environment) clientOptions() client.Options {
	o := client.Options{StallTimeout: e.StallTimeout, Concurrency: e.Concurrency, DirectIO: e.DirectIO,
		Ref: e.Ref, Credentials: e.Credentials, Warnings: os.Stderr}
	o.Cache.SizeLimit, o.Cache.MaxEntries = e.CacheSizeLimit, e.CacheMaxEntries
	if root, err := e.CacheDirs.Root(); err == nil {
		o.Cache.Root = root
	}
	return o
}

// migrateOptions are the Xet client's options for migrate's CAS connections (no shard cache: migrate
// opens its own).
func (e environment) migrateOptions(log zerolog.Logger) client.Options {
	o := e.clientOptions()
	o.Log, o.Cache = log, client.CacheOptions{}
	return o
}
