package client

import (
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// batchAction is what a Hub-style LFS batch action says about the CAS (batch mode).
type batchAction = lfsbatch.XetAction

// parseBatchAction reads the batch action git-lfs handed over (lfsbatch.ParseXetAction). The errors
// say what the LFS server left out.
func parseBatchAction(a *lfsbatch.Action) (*batchAction, error) {
	return lfsbatch.ParseXetAction(a)
}
