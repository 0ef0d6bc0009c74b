package xetfile

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the package starts is joined by whoever started it: none is left when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
