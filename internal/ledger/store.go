package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/repofs"
)

// Where the ledgers live, relative to the repository root.
const (
	Dir            = "var/schedules"
	ApprovalLogDir = "var/approvals"
	ApprovalLog    = "approved.ndjson.gz"
)

// DefaultSegmentSize is where a month rolls over to a new segment file: a
// run's commit and push cost is bounded by the segment it appends to, and
// no file nears GitHub's 50 MB warning.
const DefaultSegmentSize = 4 << 20

// Segment is one ledger file.
type Segment struct {
	Path  string // slash path relative to the repository root
	Month string // YYYY-MM; empty for single-file logs
	Index int    // 0 for YYYY-MM.ndjson.gz, n for YYYY-MM.00n.ndjson.gz
	Size  int64
}

// Store is a ledger on disk: monthly, segmented files in one directory, or
// a single file (the approval log).
type Store struct {
	root        string
	dir         string // relative to root
	single      string // file name for a single-file log
	segmentSize int64
	noSync      bool
	observe     func(path string, size int64, member []byte, cut int64)
	seals       *Seals // nil: not sealed
}

// Observe has fn told of every member appended: the file, its size after
// the append, the member's bytes, and how many bytes someone else had
// appended since astra's last member, which the append cut. While tools
// run, the runner keeps what astra wrote to tell it from what a tool wrote.
func (s *Store) Observe(fn func(path string, size int64, member []byte, cut int64)) { s.observe = fn }

// NoSync skips fsync after appends: only for generating test data, where
// crash safety does not matter and a month of appends would wait on disk.
func (s *Store) NoSync() *Store { s.noSync = true; return s }

// Open returns the monthly ledger of the repository at root.
func Open(root string, segmentSize int64) *Store {
	if segmentSize <= 0 {
		segmentSize = DefaultSegmentSize
	}
	return &Store{root: root, dir: Dir, segmentSize: segmentSize}
}

// OpenDir returns a monthly, segmented log in another directory (agent
// memory lives in var/memory).
func OpenDir(root, dir string, segmentSize int64) *Store {
	s := Open(root, segmentSize)
	s.dir = dir
	return s
}

// OpenApprovalLog returns var/approvals/approved.ndjson.gz, a single-file
// log in the same format (the approval audit trail).
func OpenApprovalLog(root string) *Store {
	return &Store{root: root, dir: ApprovalLogDir, single: ApprovalLog}
}

// Root is the repository root the store reads.
func (s *Store) Root() string { return s.root }

// Dir is the store's directory, relative to the root, slash-separated.
func (s *Store) Dir() string { return s.dir }

var segmentName = regexp.MustCompile(`^(\d{4}-\d{2})(?:\.(\d{3,}))?\.ndjson\.gz$`)

// Segments lists the ledger files in order: by month, then segment index.
func (s *Store) Segments() ([]Segment, error) {
	if s.single != "" {
		rel := path.Join(s.dir, s.single)
		st, err := repofs.Stat(s.root, rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []Segment{{Path: rel, Size: st.Size()}}, nil
	}
	entries, err := repofs.ReadDir(s.root, s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var segs []Segment
	for _, e := range entries {
		m := segmentName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		idx := 0
		if m[2] != "" {
			idx, _ = strconv.Atoi(m[2])
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		segs = append(segs, Segment{Path: path.Join(s.dir, e.Name()), Month: m[1], Index: idx, Size: info.Size()})
	}
	slices.SortFunc(segs, func(a, b Segment) int {
		if a.Month != b.Month {
			return cmpString(a.Month, b.Month)
		}
		return a.Index - b.Index
	})
	return segs, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Store) abs(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

// SegmentPath names segment idx of month.
func (s *Store) SegmentPath(month string, idx int) string {
	if idx == 0 {
		return path.Join(s.dir, month+".ndjson.gz")
	}
	return path.Join(s.dir, fmt.Sprintf("%s.%03d.ndjson.gz", month, idx))
}

// Month is the UTC month a time falls in, as ledger files name it.
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// gzipWriters recycles compressors: each holds about a megabyte of state,
// and every append writes a new member.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Tail is where the ledger ends: what the next append chains on to.
type Tail struct {
	Seq     int64     // seq of the last event; 0 for an empty ledger
	Hash    string    // sha256 hex of the last line; "" for an empty ledger
	TS      time.Time // ts of the last event
	Segment Segment   // the last segment; zero for an empty ledger
	// Seal is the seal of the gzip member that holds the last line (its
	// bytes; a string keeps Tail comparable); "" when it has none. A
	// sealed scan sets it from a seal it verified.
	Seal string
}

// Empty reports whether the ledger has no events.
func (t Tail) Empty() bool { return t.Seq == 0 && t.Hash == "" }

// lineHash is the chain hash of a line (without its newline).
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// Target is the segment the next append at now goes to: the last segment
// while it is in the current month and below the segment size, else the
// next segment or the first one of a new month. newMonth reports a month
// change, which is when the caller writes a checkpoint first.
func (s *Store) Target(t Tail, now time.Time) (seg Segment, newMonth bool) {
	month := Month(now)
	last := t.Segment
	switch {
	case s.single != "":
		return Segment{Path: path.Join(s.dir, s.single), Size: last.Size}, false
	case last.Path == "":
		return Segment{Path: s.SegmentPath(month, 0), Month: month}, true
	case month > last.Month:
		return Segment{Path: s.SegmentPath(month, 0), Month: month}, true
	case last.Size >= s.segmentSize:
		return Segment{Path: s.SegmentPath(last.Month, last.Index+1), Month: last.Month, Index: last.Index + 1}, false
	}
	return last, false
}

// Room is how many more bytes seg takes before the next append rolls over
// to a new segment.
func (s *Store) Room(seg Segment) int64 {
	if s.single != "" {
		return math.MaxInt64
	}
	return s.segmentSize - seg.Size
}

// MaxLine bounds one ledger line, written or read: a file that inflates
// to one endless line (a gzip bomb in a pull request) is refused at this
// length instead of filling memory. Outputs are tailed and payloads bounded
// far below it.
const MaxLine = 4 << 20

// Append writes events as one new gzip member at the end of seg, assigning
// Seq and Prev from tail so the chain continues. It never rewrites existing
// bytes. It returns the new tail.
func (s *Store) Append(tail Tail, seg Segment, events []*Event) (Tail, error) {
	if len(events) == 0 {
		return tail, nil
	}
	lines, tail, err := Lines(nil, tail, events)
	if err != nil {
		return Tail{}, err
	}
	var seal []byte
	if tail.Segment, seal, err = s.AppendLines(seg, lines); err != nil {
		return Tail{}, err
	}
	tail.Seal = string(seal)
	return tail, nil
}

// Lines appends to dst the ledger lines of events continuing the chain
// from tail (assigning Seq and Prev, truncating TS to the second), and
// returns them with the tail they lead to; tail.Segment is left as it is
// and tail.Seal is cleared (no member holds the lines yet). A caller that
// holds lines back before AppendLines writes them has the chain, and what
// a replay will read, already.
func Lines(dst []byte, tail Tail, events []*Event) ([]byte, Tail, error) {
	var line []byte
	tail.Seal = ""
	for _, e := range events {
		tail.Seq++
		e.Seq = tail.Seq
		e.Prev = tail.Hash
		e.TS = e.TS.UTC().Truncate(time.Second)
		line = AppendJSON(line[:0], e)
		if len(line) > MaxLine {
			return dst, Tail{}, fmt.Errorf("a %s event of %d bytes is longer than a ledger line may be (%d bytes)", e.Event, len(line), MaxLine)
		}
		tail.Hash = lineHash(line)
		tail.TS = e.TS
		dst = append(append(dst, line...), '\n')
	}
	return dst, tail, nil
}

// AppendLines writes lines (from Lines) as one new gzip member at the end
// of seg, synced to disk, and returns seg with its new size. A sealed
// store seals the member (its seal is returned too) and refuses to write
// without the ledger key (ErrNoKey).
func (s *Store) AppendLines(seg Segment, lines []byte) (Segment, []byte, error) {
	var seal, extra []byte
	if s.seals != nil {
		var err error
		if seal, extra, err = s.sealLines(seg.Path, lines); err != nil {
			return seg, nil, err
		}
	}
	var member bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&member)
	zw.Header.Extra = extra
	if _, err := zw.Write(lines); err != nil {
		return seg, nil, err
	}
	if err := zw.Close(); err != nil {
		return seg, nil, err
	}
	f, err := repofs.OpenFile(s.root, seg.Path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return seg, nil, err
	}
	// The member goes where astra's last one ended, not wherever the file
	// ends: bytes someone else appended since (a tool) are overwritten and
	// cut, so they never end up inside the log, only ever after its last
	// member, which Repair cuts as a torn tail.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return seg, nil, err
	}
	if fi.Size() < seg.Size {
		f.Close()
		return seg, nil, fmt.Errorf("%s is %d bytes, shorter than the %d astra wrote: someone else changed it; restore it with `git checkout -- %s`", seg.Path, fi.Size(), seg.Size, seg.Path)
	}
	cut := fi.Size() - seg.Size
	// One write: a crash leaves at most one partial member at the end,
	// which Repair removes.
	if _, err := f.WriteAt(member.Bytes(), seg.Size); err != nil {
		f.Close()
		return seg, nil, err
	}
	if cut > 0 {
		if err := f.Truncate(seg.Size + int64(member.Len())); err != nil {
			f.Close()
			return seg, nil, err
		}
	}
	if !s.noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return seg, nil, err
		}
	}
	if err := f.Close(); err != nil {
		return seg, nil, err
	}
	seg.Size += int64(member.Len())
	if s.observe != nil {
		s.observe(seg.Path, seg.Size, member.Bytes(), cut)
	}
	return seg, seal, nil
}

// MonthOf is the month (YYYY-MM) of a file path of this store's segments;
// ok is false for any other path.
func (s *Store) MonthOf(file string) (month string, ok bool) {
	if s.single != "" || path.Dir(file) != s.dir {
		return "", false
	}
	m := segmentName.FindStringSubmatch(path.Base(file))
	if m == nil {
		return "", false
	}
	return m[1], true
}
