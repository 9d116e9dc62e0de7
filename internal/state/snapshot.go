package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/repofs"
)

// A snapshot is the state as a replay of the ledger up to one line (its
// head) rebuilds it, committed with the ledger in the same commit as the
// events it covers. A run loads it and replays only the events after its
// head, so its cost is what happened since the last run, not the month.
// It holds nothing the ledger does not: it is the ledger, folded.
const (
	// SnapshotPath is the snapshot, relative to the repository root.
	SnapshotPath = "var/state/snapshot"
	// SparsePath lists, as sparse-checkout patterns, the ledger files the
	// next run reads and appends to: a checkout of them, the snapshot and
	// the configuration is all a run needs.
	SparsePath = "var/state/sparse-checkout"
)

// snapshotVersion numbers the layout of the snapshot file itself; the
// layout of the state in it has its own shape hash (codec.go).
const snapshotVersion = 1

// maxSnapshot bounds what is read: a snapshot is a few MB for a month of
// a million events; a larger file is not one astra wrote.
const maxSnapshot = 256 << 20

// Replay rebuilds the state at now from the ledger: from the snapshot
// and the events after its head when the snapshot is bound to this
// ledger, else by replaying the month (ReplayEach), and then Fallback says
// why. The hash chain of the files it reads is verified.
//
// On a *ledger.CorruptError the state holds every event before the bad
// line, and the error says where it is.
func Replay(store *ledger.Store, now time.Time) (*State, ledger.Tail, error) {
	segs, err := store.Segments()
	if err != nil {
		return New(now), ledger.Tail{}, err
	}
	st, tail, why, err := fromSnapshot(store.Root(), segs, now)
	if why == "" {
		return st, tail, err
	}
	st = New(now)
	tail, err = replay(st, store.Root(), segs, 0, nil)
	if errors.Is(err, ErrIncomplete) {
		return st, tail, fmt.Errorf("%w; the state snapshot cannot stand in for it: %s. Check out the whole ledger (`git sparse-checkout disable`) and run again", err, why)
	}
	if len(segs) > 0 {
		st.fallback = fmt.Sprintf("the state snapshot was not used (%s): the month's %d events were replayed instead", why, st.Events)
	}
	return st, tail, err
}

// Fallback says why Replay replayed the month instead of starting from
// the snapshot; "" when it started from the snapshot or the ledger is
// empty.
func (s *State) Fallback() string { return s.fallback }

// head is the ledger line a snapshot is bound to.
type head struct {
	file string
	seq  int64
	hash string
}

// header is a snapshot's first two lines.
func header(version int, shape string, h head) string {
	return fmt.Sprintf("astra-state\t%d\t%s\nhead\t%s\t%d\t%s\n", version, shape, h.file, h.seq, h.hash)
}

// parseHeader reads the first two lines; body is the rest.
func parseHeader(data []byte) (version int, shape string, h head, body []byte, err error) {
	line := func(n int) []string {
		l, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		return strings.Split(string(l), "\t")
	}
	first := line(1)
	if len(first) != 3 || first[0] != "astra-state" {
		return 0, "", head{}, nil, errors.New("line 1: not an astra state snapshot")
	}
	if version, err = strconv.Atoi(first[1]); err != nil {
		return 0, "", head{}, nil, fmt.Errorf("line 1: bad version %q", first[1])
	}
	second := line(2)
	if len(second) != 4 || second[0] != "head" {
		return 0, "", head{}, nil, errors.New("line 2: want head <file> <seq> <hash>")
	}
	h.file, h.hash = second[1], second[3]
	if h.seq, err = strconv.ParseInt(second[2], 10, 64); err != nil || h.seq < 1 {
		return 0, "", head{}, nil, fmt.Errorf("line 2: bad seq %q", second[2])
	}
	return version, first[2], h, data, nil
}

// readSnapshot reads and checks the snapshot's header. why says why it
// cannot be used: it is absent, or was written by another astra; bad that
// it is not a snapshot astra wrote.
func readSnapshot(root string) (h head, body []byte, why string, bad error) {
	data, err := repofs.ReadFile(root, SnapshotPath, maxSnapshot)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return head{}, nil, "there is no " + SnapshotPath + " yet", nil
	case err != nil:
		return head{}, nil, "", err
	case stateCodecErr != nil:
		return head{}, nil, "", stateCodecErr
	}
	version, shape, h, body, err := parseHeader(data)
	switch {
	case err != nil:
		return head{}, nil, "", fmt.Errorf("%s:%s", SnapshotPath, strings.TrimPrefix(err.Error(), "line "))
	case version != snapshotVersion || shape != stateCodec.shape:
		return head{}, nil, SnapshotPath + " was written by another version of astra", nil
	}
	return h, body, "", nil
}

// fromSnapshot loads the snapshot and applies the events after its head.
// why says why it cannot (then the caller replays); err is damage found in
// the ledger files read, reported as a replay would report it.
func fromSnapshot(root string, segs []ledger.Segment, now time.Time) (st *State, tail ledger.Tail, why string, err error) {
	st = New(now)
	h, body, why, bad := readSnapshot(root)
	if bad != nil {
		return st, tail, bad.Error(), nil
	}
	if why != "" {
		return st, tail, why, nil
	}
	i := slices.IndexFunc(segs, func(s ledger.Segment) bool { return s.Path == h.file })
	if i < 0 {
		return st, tail, fmt.Sprintf("it follows %s, which is not in the checkout", h.file), nil
	}
	if err := stateCodec.decode(body, 3, st); err != nil {
		return New(now), tail, SnapshotPath + ":" + strings.TrimPrefix(err.Error(), "line "), nil
	}
	st.view(now)
	tail, err = ledger.Scan(root, segs[i:], ledger.ScanOptions{Verify: true, SkipOutput: true, Resume: ledger.Tail{Seq: h.seq, Hash: h.hash}},
		func(e *ledger.Event) error {
			st.Apply(e)
			return nil
		})
	var ce *ledger.CorruptError
	if errors.As(err, &ce) && ce.Kind == ledger.ProblemResume {
		return New(now), ledger.Tail{}, fmt.Sprintf("it does not match the ledger: %v", err), nil
	}
	st.snapHead = h.seq
	return st, tail, "", err
}

// encodeSnapshot is the snapshot of st bound to the ledger line tail.
func encodeSnapshot(st *State, tail ledger.Tail) ([]byte, error) {
	if stateCodecErr != nil {
		return nil, stateCodecErr
	}
	h := head{file: tail.Segment.Path, seq: tail.Seq, hash: tail.Hash}
	buf := make([]byte, 0, 1<<20)
	buf = append(buf, header(snapshotVersion, stateCodec.shape, h)...)
	return stateCodec.encode(buf, st), nil
}

// SaveSnapshot writes the snapshot of the journal's state, bound to the
// ledger's last line, and the list of files a sparse checkout needs, each
// only when it changed; what it writes joins Files, for the commit that
// also holds the events it covers. A dry journal writes nothing.
func (j *Journal) SaveSnapshot() error {
	if j.dry || j.tail.Empty() || j.tail.Seq == j.saved.Seq && j.tail.Hash == j.saved.Hash {
		return nil
	}
	root := j.store.Root()
	data, err := encodeSnapshot(j.st, j.tail)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{SnapshotPath, data}, {SparsePath, j.sparse()}} {
		old, err := repofs.ReadFile(root, f.path, maxSnapshot)
		if err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if err := repofs.WriteFile(root, f.path, f.data); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
		j.files = append(j.files, f.path)
	}
	j.saved = j.tail
	return nil
}

// sparse is the content of SparsePath: the ledger file the next run
// appends to, agent memory of this month and the last (what recall reads),
// and the approvals (tokens and their log).
func (j *Journal) sparse() []byte {
	var b strings.Builder
	b.WriteString("/" + j.tail.Segment.Path + "\n")
	last := ledger.Month(time.Date(j.st.Now.Year(), j.st.Now.Month()-1, 1, 0, 0, 0, 0, time.UTC))
	if segs, err := ledger.OpenDir(j.store.Root(), MemoryDir, 0).Segments(); err == nil {
		for _, s := range segs {
			if s.Month >= last {
				b.WriteString("/" + s.Path + "\n")
			}
		}
	}
	b.WriteString("/" + path.Clean(ledger.ApprovalLogDir) + "/\n")
	return []byte(b.String())
}

// SnapshotCheck is what VerifySnapshot found.
type SnapshotCheck struct {
	Seq  int64  // the ledger line the snapshot is bound to
	Note string // why it was not compared; "" when it was
}

// VerifySnapshot checks that the snapshot equals a replay of the ledger up
// to its head, line for line. A snapshot that cannot be compared (absent,
// written by another version of astra, or a checkout without the ledger's
// start) is not an error: Note says why. A difference is an error naming
// the snapshot's first line that differs.
func VerifySnapshot(store *ledger.Store) (SnapshotCheck, error) {
	root := store.Root()
	h, body, why, bad := readSnapshot(root)
	if bad != nil {
		return SnapshotCheck{}, bad
	}
	if why != "" {
		return SnapshotCheck{Note: why}, nil
	}
	c := SnapshotCheck{Seq: h.seq}
	segs, err := store.Segments()
	if err != nil {
		return c, err
	}
	i := slices.IndexFunc(segs, func(s ledger.Segment) bool { return s.Path == h.file })
	if i < 0 {
		return c, fmt.Errorf("%s: it follows %s, which is not in the ledger", SnapshotPath, h.file)
	}
	// The head line must be what the snapshot was bound to.
	_, err = ledger.Scan(root, segs[i:i+1], ledger.ScanOptions{Resume: ledger.Tail{Seq: h.seq, Hash: h.hash}}, func(*ledger.Event) error { return nil })
	if err != nil {
		return c, fmt.Errorf("%s does not match the ledger: %w", SnapshotPath, err)
	}
	st := New(time.Time{})
	if _, err := replay(st, root, segs[:i+1], h.seq, nil); errors.Is(err, ErrIncomplete) {
		c.Note = err.Error() + ": not compared"
		return c, nil
	} else if err != nil {
		return c, err
	}
	want, err := encodeSnapshot(st, ledger.Tail{Seq: h.seq, Hash: h.hash, Segment: segs[i]})
	if err != nil {
		return c, err
	}
	_, _, _, want, _ = parseHeader(want)
	return c, firstDifference(body, want, h.seq)
}

// firstDifference names the first line where the snapshot's body differs
// from a replay's.
func firstDifference(got, want []byte, seq int64) error {
	if bytes.Equal(got, want) {
		return nil
	}
	gl, wl := bytes.Split(got, []byte{'\n'}), bytes.Split(want, []byte{'\n'})
	for n := 0; ; n++ {
		var g, w []byte
		if n < len(gl) {
			g = gl[n]
		}
		if n < len(wl) {
			w = wl[n]
		}
		if !bytes.Equal(g, w) {
			return fmt.Errorf("%s:%d: differs from a replay of the ledger up to seq %d: the snapshot has %q, the replay %q",
				SnapshotPath, n+3, seq, clip(g), clip(w))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
