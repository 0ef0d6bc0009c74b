module github.com/git-xet-transfer/git-xet-transfer

go 1.26.0

require github.com/zeebo/blake3 v0.2.4

require github.com/klauspost/cpuid/v2 v2.0.12 // indirect
