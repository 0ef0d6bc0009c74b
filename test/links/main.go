// Command links checks the documentation's links, offline: every relative link and every anchor in
// README.md and docs/**/*.md must resolve, and the README stays a reference of at most
// maxReadmeLines lines.
//
//   - A relative link (inline `[text](target)`, an image, or a reference definition `[x]: target`)
//     must name a file or directory that exists, relative to the file that holds it.
//   - An anchor (`#section`, `file.md#section`) must name a heading of that Markdown file, by
//     GitHub's rules for heading ids: the heading's text lower-cased, every character that is not a
//     letter, a digit, a space, a hyphen or an underscore dropped, spaces made hyphens, and a
//     repeated id suffixed -1, -2, …; or an explicit `<a name="…">` / `id="…"`.
//   - Links with a scheme (https:, mailto:) are not followed: the check needs no network.
//
// Code blocks and code spans hold no links. Usage: links [DIR] (default "."), DIR the repository's
// root. It prints each finding as "path:line: what" and exits 1 when there is one (2 when the tree
// cannot be read).
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// maxReadmeLines is the README's budget: a reference, not a notebook (issue 45).
const maxReadmeLines = 450

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	findings, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "links:", err)
		os.Exit(2)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "links: %d problems\n", len(findings))
		os.Exit(1)
	}
}

// check returns every finding in the Markdown files of root (README.md and docs/), sorted.
func check(root string) ([]string, error) {
	files, err := markdownFiles(root)
	if err != nil {
		return nil, err
	}
	docs := map[string]*doc{} // by path relative to root, slash-separated
	for _, f := range files {
		d, err := readDoc(root, f)
		if err != nil {
			return nil, err
		}
		docs[f] = d
	}
	var out []string
	if d, ok := docs["README.md"]; !ok {
		out = append(out, "README.md: missing")
	} else if d.lines > maxReadmeLines {
		out = append(out, fmt.Sprintf("README.md: %d lines, more than %d: move detail to docs/", d.lines, maxReadmeLines))
	}
	for _, f := range files {
		for _, l := range docs[f].links {
			if what := resolve(root, f, l.target, docs); what != "" {
				out = append(out, fmt.Sprintf("%s:%d: %s", f, l.line, what))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// markdownFiles are README.md and every .md file under docs/, relative to root, slash-separated.
func markdownFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return files, nil
}

// resolve says what is wrong with a link to target from the file from ("" when it resolves).
func resolve(root, from, target string, docs map[string]*doc) string {
	if target == "" || hasScheme(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	file = strings.SplitN(file, "?", 2)[0]
	to := from
	if file != "" {
		if strings.HasPrefix(file, "/") {
			to = strings.TrimPrefix(file, "/")
		} else {
			to = filepath.ToSlash(filepath.Join(filepath.Dir(from), file))
		}
		if strings.HasPrefix(to, "../") || to == ".." {
			return fmt.Sprintf("link %q leaves the repository", target)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(to))); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", target, to)
		}
	}
	if anchor == "" || !strings.HasSuffix(to, ".md") {
		return ""
	}
	d, ok := docs[to]
	if !ok {
		var err error
		if d, err = readDoc(root, to); err != nil {
			return fmt.Sprintf("link %q: %v", target, err)
		}
		docs[to] = d
	}
	if !d.anchors[strings.ToLower(anchor)] {
		return fmt.Sprintf("link %q: %s has no heading with the id %q", target, to, anchor)
	}
	return ""
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func hasScheme(s string) bool { return schemeRE.MatchString(s) }

// doc is what a Markdown file offers (its anchors) and asks for (its links).
type doc struct {
	lines   int
	anchors map[string]bool
	links   []link
}

type link struct {
	line   int
	target string
}

var (
	fenceRE     = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	headingRE   = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	codeSpanRE  = regexp.MustCompile("(`+)[^`]*?`+")
	inlineRE    = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE    = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	htmlIDRE    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkTextRE  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTagRE   = regexp.MustCompile(`<[^>]+>`)
	headingBare = regexp.MustCompile(`^ {0,3}#{1,6}$`)
)

// readDoc reads the Markdown file rel (relative to root) for its anchors and links.
func readDoc(root, rel string) (*doc, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(b), "\n")
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	var fence string
	for i, line := range strings.Split(text, "\n") {
		d.lines++
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[1]
				continue
			case strings.HasPrefix(m[1], fence[:1]) && len(m[1]) >= len(fence):
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(line, -1) {
			d.anchors[strings.ToLower(m[1])] = true
		}
		if m := headingRE.FindStringSubmatch(line); m != nil && !headingBare.MatchString(line) {
			id := slug(m[2])
			if n := seen[id]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", id, n)] = true
			} else {
				d.anchors[id] = true
			}
			seen[id]++
		}
		bare := codeSpanRE.ReplaceAllString(line, "")
		for _, m := range inlineRE.FindAllStringSubmatch(bare, -1) {
			d.links = append(d.links, link{i + 1, m[2]})
		}
		if m := refDefRE.FindStringSubmatch(bare); m != nil {
			d.links = append(d.links, link{i + 1, m[1]})
		}
	}
	return d, nil
}

// slug is GitHub's id of a heading whose Markdown text is h.
func slug(h string) string {
	h = linkTextRE.ReplaceAllString(h, "$1")
	h = htmlTagRE.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
