package client

import "github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"

// Git runs git commands in one directory (the repository git-lfs runs the agent in): gitrepo's
// runner.
type Git = gitrepo.Git

// GitError is a failed git command.
type GitError = gitrepo.GitError
