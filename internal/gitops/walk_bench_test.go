package gitops

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// BenchmarkCommitMessagesMonth: ledger verify reads the anchors of every
// commit of the month, newest first: a month of 5-minute runs is 8,640
// commits, each with its Ledger-Head trailer.
func BenchmarkCommitMessagesMonth(b *testing.B) {
	const n = 8640
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	var in strings.Builder
	for i := range n {
		msg := fmt.Sprintf("astra: 1 ran\n\nLedger-Head: var/schedules/2026-11.ndjson.gz %d %064x\nAstra-Runner: r\n", i+1, i)
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter t <t@example.com> %d +0000\ndata %d\n%s", i+1, 1_700_000_000+i, len(msg), msg)
		if i > 0 {
			fmt.Fprintf(&in, "from :%d\n", i)
		}
		data := fmt.Sprintf("%d\n", i)
		fmt.Fprintf(&in, "M 100644 inline var/x\ndata %d\n%s\n", len(data), data)
	}
	imp := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	imp.Stdin = strings.NewReader(in.String())
	if out, err := imp.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "gc", "-q").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	r, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		msgs, err := r.CommitMessagesUntil(func(CommitMessage) bool { return false })
		if err != nil || len(msgs) != n {
			b.Fatal(err, len(msgs))
		}
	}
}
