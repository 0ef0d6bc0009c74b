package bufpool

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// On Linux a Map buffer is eligible for transparent huge pages (when the kernel has them at all),
// which makes a fresh buffer five times cheaper to fill (see hugePages).
func TestMapAsksForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this kernel has no transparent huge pages (%q, %v)", mode, err)
	}
	b := Map(8 << 20)
	defer Unmap(b)
	addr := uint64(base(b))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var lo, hi uint64
		if !strings.HasSuffix(fields[0], ":") { // a mapping's first line: "lo-hi perms offset dev inode"
			_, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi)
			in = err == nil && lo <= addr && addr < hi
			continue
		}
		if in && fields[0] == "THPeligible:" {
			if len(fields) < 2 || fields[1] != "1" {
				t.Fatalf("the mapping at %x is not eligible for huge pages: %q", addr, sc.Text())
			}
			return
		}
	}
	t.Fatalf("no mapping holding %x with a THPeligible line in /proc/self/smaps", addr)
}
