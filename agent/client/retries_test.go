package client

import (
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

func TestRetryPolicyFromGitLFSSettings(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]string
		want retry.Policy
	}{
		{nil, retry.Policy{}},
		{map[string]string{"lfs.transfer.maxretries": "2"}, retry.Policy{Attempts: 3}},
		{map[string]string{"lfs.transfer.maxretries": "0", "lfs.transfer.maxretrydelay": "x"}, retry.Policy{}},
		{map[string]string{"lfs.transfer.maxretrydelay": "4"}, retry.Policy{BaseDelay: time.Second, MaxDelay: 4 * time.Second}},
		{map[string]string{"lfs.transfer.maxretrydelay": "0"}, retry.Policy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}},
		{map[string]string{"lfs.transfer.maxretrydelay": "-1"}, retry.Policy{}},
	} {
		got := retryPolicyOf(func(k string) (string, bool) { v, ok := c.cfg[k]; return v, ok })
		if got != c.want {
			t.Errorf("%v: %+v, want %+v", c.cfg, got, c.want)
		}
	}
}
