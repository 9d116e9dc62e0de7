package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// AnchorKey is the git trailer that anchors a ledger file's head in a
// commit message. The hash chain proves every line but the last one
// unchanged; the anchor, kept outside the file, proves the last one.
const AnchorKey = "Ledger-Head"

// Anchor is what a commit recorded of a ledger file it appended to: the
// seq and chain hash (sha256 hex) of the file's last line then.
type Anchor struct {
	File   string // slash path relative to the repository root
	Seq    int64
	Hash   string
	Commit string // the commit that carried it; set by the caller, not part of the trailer
}

// Anchor is the anchor of the ledger's head: the last line of the file
// the tail is in.
func (t Tail) Anchor() Anchor { return Anchor{File: t.Segment.Path, Seq: t.Seq, Hash: t.Hash} }

// FormatAnchors renders anchors as trailer lines ("Ledger-Head: <file>
// <seq> <sha256>"), one per line, for the last paragraph of a commit
// message.
func FormatAnchors(anchors []Anchor) string {
	var b strings.Builder
	for i, a := range anchors {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s: %s %d %s", AnchorKey, a.File, a.Seq, a.Hash)
	}
	return b.String()
}

// ParseAnchors reads the anchor trailers of a commit message. Lines that
// are not well-formed anchors are ignored: an anchor is only ever a claim
// that the ledger must match, never a way to excuse it.
func ParseAnchors(msg string) []Anchor {
	var out []Anchor
	for _, line := range strings.Split(msg, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.EqualFold(key, AnchorKey) {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 3 || !validPath(f[0]) || !isHash(f[2]) {
			continue
		}
		seq, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || seq < 1 {
			continue
		}
		out = append(out, Anchor{File: f[0], Seq: seq, Hash: f[2]})
	}
	return out
}

func validPath(p string) bool {
	return p != "" && path.Clean(p) == p && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// VerifyAnchors checks segs against the anchors that commits recorded:
// for each anchor of one of them, the file must still hold that seq, and
// its line must hash to the anchor. Anchors of other logs and of files not
// in segs are skipped, unless the file is gone. Run it after Verify:
// together they prove every line up to the newest anchor is as committed,
// the last one included. The error is a *CorruptError of kind
// ProblemAnchor naming the first file:line that differs and the commit
// that anchored it.
func (s *Store) VerifyAnchors(segs []Segment, anchors []Anchor) error {
	byFile := map[string][]Anchor{}
	for _, a := range anchors {
		if s.owns(a.File) {
			byFile[a.File] = append(byFile[a.File], a)
		}
	}
	for _, seg := range segs {
		as := byFile[seg.Path]
		delete(byFile, seg.Path)
		if len(as) == 0 {
			continue
		}
		if err := s.checkAnchors(seg.Path, as); err != nil {
			return err
		}
	}
	for _, file := range slices.Sorted(maps.Keys(byFile)) { // anchored, not among segs
		if _, err := os.Stat(s.abs(file)); !errors.Is(err, fs.ErrNotExist) {
			continue // not asked to check it
		}
		a := byFile[file][0]
		return &CorruptError{File: a.File, Line: 1, Kind: ProblemAnchor, Commit: a.Commit,
			Msg: fmt.Sprintf("the file is gone, but it was committed in %s with seq %d as its last line", short(a.Commit), a.Seq)}
	}
	return nil
}

// owns reports whether a ledger file path belongs to this store.
func (s *Store) owns(file string) bool {
	if s.single != "" {
		return file == path.Join(s.dir, s.single)
	}
	return path.Dir(file) == s.dir && segmentName.MatchString(path.Base(file))
}

// checkAnchors compares the lines of one file with its anchors, reporting
// the first line that differs. Every anchor must hold: two commits that
// anchored one seq differently mean a committed line was changed.
func (s *Store) checkAnchors(file string, anchors []Anchor) error {
	want := map[int64][]Anchor{}
	for _, a := range anchors {
		want[a.Seq] = append(want[a.Seq], a)
	}
	f, err := openSegment(s.root, file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		return &CorruptError{File: file, Line: 1, Kind: gzipKind(err), Msg: err.Error()}
	}
	br := bufio.NewReaderSize(zr, 256<<10)
	var first int64
	lineNo := 0
	for len(want) > 0 {
		line, err := readLine(br)
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &CorruptError{File: file, Line: lineNo + 1, Kind: gzipKind(err), Msg: err.Error()}
		}
		lineNo++
		line = line[:len(line)-1]
		if lineNo == 1 {
			var e Event
			if err := Unmarshal(line, &e); err != nil {
				return &CorruptError{File: file, Line: 1, Kind: ProblemJSON, Msg: err.Error()}
			}
			first = e.Seq
		}
		seq := first + int64(lineNo) - 1 // Verify proved seq increases by one
		as, ok := want[seq]
		if !ok {
			continue
		}
		if err := checkLine(file, lineNo, seq, line, as); err != nil {
			return err
		}
		delete(want, seq)
	}
	if len(want) == 0 {
		return nil
	}
	return missingAnchor(file, want, first, lineNo)
}

// checkLine holds line lineNo (seq) of file to each anchor of its seq.
func checkLine(file string, lineNo int, seq int64, line []byte, anchors []Anchor) error {
	h := lineHash(line)
	for _, a := range anchors {
		if a.Hash != h {
			return &CorruptError{File: file, Line: lineNo, Kind: ProblemAnchor, Commit: a.Commit,
				Msg: fmt.Sprintf("this line (seq %d) was changed after it was committed in %s: its hash is %.12s, the commit recorded %.12s", seq, short(a.Commit), h, a.Hash)}
		}
	}
	return nil
}

// missingAnchor reports the lowest anchored seq that file (lines seqs
// first to first+lines-1) does not have (any more): every seq between its
// first and last line was seen, so they lie before or after.
func missingAnchor(file string, want map[int64][]Anchor, first int64, lines int) error {
	var missing Anchor
	for _, as := range want {
		if missing.Seq == 0 || as[0].Seq < missing.Seq {
			missing = as[0]
		}
	}
	line := lines + 1 // the first line the file lacks
	if lines > 0 && missing.Seq < first {
		line = 1
	}
	return &CorruptError{File: file, Line: line, Kind: ProblemAnchor, Commit: missing.Commit,
		Msg: fmt.Sprintf("seq %d, committed in %s, is no longer in the file: lines were removed after it was committed", missing.Seq, short(missing.Commit))}
}

// short abbreviates a commit hash as git does.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "an earlier commit"
	}
	return commit
}
