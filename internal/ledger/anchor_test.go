package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnchorsRoundTrip(t *testing.T) {
	h := strings.Repeat("0a", 32)
	in := []Anchor{{File: "var/schedules/2026-11.ndjson.gz", Seq: 42, Hash: h}, {File: "var/approvals/approved.ndjson.gz", Seq: 1, Hash: h}}
	text := FormatAnchors(in)
	if text != "Ledger-Head: var/schedules/2026-11.ndjson.gz 42 "+h+"\nLedger-Head: var/approvals/approved.ndjson.gz 1 "+h {
		t.Fatalf("FormatAnchors = %q", text)
	}
	msg := "astra: 1 ran\n\n- ran t\nLedger-Head: in the body 1 " + h + "\n\n[skip ci]\n\n" + text + "\n"
	got := ParseAnchors(msg)
	if len(got) != 2 || got[0] != in[0] || got[1] != in[1] {
		t.Fatalf("ParseAnchors = %+v", got)
	}
	for _, bad := range []string{
		"Ledger-Head: var/x 0 " + h, "Ledger-Head: var/x -1 " + h, "Ledger-Head: var/x 1 " + h[:63],
		"Ledger-Head: var/x 1 " + strings.ToUpper(h), "Ledger-Head: /etc/x 1 " + h, "Ledger-Head: ../x 1 " + h,
		"Ledger-Head: var/./x 1 " + h, "Ledger-Head: var/x 1 " + h + " extra", "Ledger-Tail: var/x 1 " + h,
	} {
		if a := ParseAnchors(bad); len(a) != 0 {
			t.Errorf("%q parsed as %+v", bad, a)
		}
	}
	if a := ParseAnchors("ledger-head: var/x 3 " + h); len(a) != 1 || a[0].Seq != 3 {
		t.Errorf("trailer keys are case-insensitive in git: %+v", a)
	}
}

// fourAnchored appends four runs of three events to a new ledger and
// returns the anchors of four commits of them, newest first, as history
// is read.
func fourAnchored(t *testing.T) (string, *Store, []Anchor) {
	t.Helper()
	root := t.TempDir()
	s := Open(root, 0)
	var anchors []Anchor
	var tail Tail
	for i := range 4 {
		tail = appendN(t, s, tail, t0, 3)
		a := tail.Anchor()
		a.Commit = strings.Repeat(string(rune('a'+i)), 40)
		anchors = append([]Anchor{a}, anchors...)
	}
	return root, s, anchors
}

func TestVerifyAnchors(t *testing.T) {
	_, s, anchors := fourAnchored(t)
	segs, _ := s.Segments()
	if err := s.VerifyAnchors(segs, anchors); err != nil {
		t.Fatalf("a clean ledger: %v", err)
	}
	// Anchors of other logs are not this store's business.
	other := Anchor{File: "var/approvals/approved.ndjson.gz", Seq: 99, Hash: strings.Repeat("f", 64)}
	if err := s.VerifyAnchors(segs, append(anchors, other)); err != nil {
		t.Fatalf("another log's anchor: %v", err)
	}

	// A check of some files leaves the anchors of the others alone.
	if err := s.VerifyAnchors(nil, anchors); err != nil {
		t.Fatalf("no files checked: %v", err)
	}
}

// An edit or a removal the chain cannot see (the last line, the last
// member, a line rechained on top of) is found against the anchors and
// named with the commit; so is a removed file.
func TestVerifyAnchorsFindsChanges(t *testing.T) {
	root, s, anchors := fourAnchored(t)
	segs, _ := s.Segments()
	file := filepath.Join(root, segs[0].Path)
	orig, _ := os.ReadFile(file)
	lines, _ := fileLines("", file)
	expect := func(name string, lines [][]byte, line int, in, commit string) {
		t.Helper()
		rewrite(t, file, lines)
		defer os.WriteFile(file, orig, 0o644)
		segs, _ := s.Segments()
		if _, err := Verify(root, segs); err != nil {
			t.Fatalf("%s: the chain sees it already: %v", name, err)
		}
		err := s.VerifyAnchors(segs, anchors)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Kind != ProblemAnchor || ce.Line != line || !strings.Contains(ce.Msg, in) || ce.Commit != commit || ce.Repairable() {
			t.Fatalf("%s: %v, want line %d, %q, commit %.8s", name, err, line, in, commit)
		}
	}
	edit := func(i int) [][]byte {
		l := append([][]byte(nil), lines...)
		l[i] = bytes.Replace(l[i], []byte(`"status":"ok"`), []byte(`"status":"ko"`), 1)
		return l
	}
	expect("edit of the last line", edit(11), 12, "was changed after it was committed in dddddddddddd", anchors[0].Commit)
	expect("last line removed", lines[:11], 12, "seq 12, committed in dddddddddddd, is no longer in the file", anchors[0].Commit)
	expect("last member removed", lines[:9], 10, "seq 12", anchors[0].Commit)

	// An edit of the then-last line, with the chain continued on top of
	// it, is still caught by the older anchor.
	rechained := append([][]byte(nil), edit(8)...)
	prev := lineHash(rechained[8])
	for i := 9; i < len(rechained); i++ {
		var ev Event
		if err := Unmarshal(rechained[i], &ev); err != nil {
			t.Fatal(err)
		}
		ev.Prev = prev
		rechained[i] = AppendJSON(nil, &ev)
		prev = lineHash(rechained[i])
	}
	expect("edit rechained", rechained, 9, "committed in cccccccccccc", anchors[1].Commit)

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	segs, _ = s.Segments()
	err := s.VerifyAnchors(segs, anchors)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "the file is gone") {
		t.Fatalf("a removed file: %v", err)
	}
}
