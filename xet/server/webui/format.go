package webui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// formatBytes is n in B, KiB, MiB, GiB or TiB, one decimal (the units of `xet-server stats`).
func formatBytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= 1024 && i < 3 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}

// formatRatio is a dedupe ratio (logical over stored) as "4.20×".
func formatRatio(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) + "×" }

// formatShare is a share in [0, 1] as a percentage with one decimal.
func formatShare(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + " %" }

// exact is a float as the shortest text that reads back to it (what a page's data attributes
// carry for checks, as `stats --json` carries the ratio).
func exact(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// formatTime is a registration time in UTC, to the second.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// display is a repository name as a page shows it: valid UTF-8 (html/template escapes the rest).
func display(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
