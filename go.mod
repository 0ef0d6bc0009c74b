module github.com/git-xet-transfer/git-xet-transfer

go 1.26.0

require (
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/rs/zerolog v1.35.1
	github.com/zeebo/blake3 v0.2.4
	golang.org/x/sync v0.24.0
)

require (
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
