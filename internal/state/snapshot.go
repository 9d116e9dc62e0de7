package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
	// StateDir holds the snapshot's files, relative to the repository root.
	StateDir = "var/state"
	// SnapshotPath is the snapshot, relative to the repository root.
	SnapshotPath = StateDir + "/snapshot"
	// DeadLettersPath holds the snapshot's dead letters. Unlike the rest
	// of the state they pile up, month after month, until a person
	// releases them, so they are a file of their own that a run rewrites
	// only when they changed; the snapshot names its sha256.
	DeadLettersPath = StateDir + "/dead-letters"
	// SparsePath lists, as sparse-checkout patterns, the ledger files the
	// next run reads and appends to: a checkout of them, the snapshot and
	// the configuration is all a run needs.
	SparsePath = StateDir + "/sparse-checkout"
)

// snapshotVersion numbers the layout of the snapshot file itself; the
// layout of the state in it has its own shape hash (codec.go).
const snapshotVersion = 2

// deadSection is the section DeadLettersPath holds.
const deadSection = "dead_letters"

func mainSection(name string) bool { return name != deadSection }
func deadOnly(name string) bool    { return name == deadSection }

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
//
// A sealed store (ledger.Store.Sealed) uses the snapshot only when its
// seal verifies, verifies the chain of every line it applies, and applies
// only what a valid seal (or the snapshot's) covers. Lines after that are
// a *ledger.UnsealedError (kind errkind.ErrLedger) saying per file where
// the sealed part ends and what follows; the state and tail are then the
// sealed part's, so a caller can move those bytes away
// (ledger.Quarantine) and go on. A newest seal by a key that is not
// listed, or a chain broken before the last seal, is a *ledger.CorruptError.
func Replay(store *ledger.Store, now time.Time) (*State, ledger.Tail, error) {
	segs, err := store.Segments()
	if err != nil {
		return New(now), ledger.Tail{}, err
	}
	st, tail, why, err := fromSnapshot(store, segs, now)
	if why == "" {
		return st, tail, err
	}
	st = New(now)
	tail, err = replay(st, store, segs, 0, nil)
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

// header is a snapshot's first three lines: the layout, the ledger line it
// is bound to, and the sha256 of its dead letters' file.
func header(version int, shape string, h head, dead string) string {
	return fmt.Sprintf("astra-state\t%d\t%s\nhead\t%s\t%d\t%s\npart\t%s\t%s\n", version, shape, h.file, h.seq, h.hash, DeadLettersPath, dead)
}

// headerLines is how many lines header writes: the body's first line
// number is one more.
const headerLines = 3

// parseHeader reads the header; body is the rest. A snapshot of another
// version returns that version and no error, whatever follows.
func parseHeader(data []byte) (version int, shape string, h head, dead string, body []byte, err error) {
	line := func() []string {
		l, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		return strings.Split(string(l), "\t")
	}
	first := line()
	if len(first) != 3 || first[0] != "astra-state" {
		return 0, "", head{}, "", nil, errors.New("line 1: not an astra state snapshot")
	}
	if version, err = strconv.Atoi(first[1]); err != nil {
		return 0, "", head{}, "", nil, fmt.Errorf("line 1: bad version %q", first[1])
	}
	if version != snapshotVersion {
		return version, first[2], head{}, "", nil, nil
	}
	second := line()
	if len(second) != 4 || second[0] != "head" {
		return 0, "", head{}, "", nil, errors.New("line 2: want head <file> <seq> <hash>")
	}
	h.file, h.hash = second[1], second[3]
	if h.seq, err = strconv.ParseInt(second[2], 10, 64); err != nil || h.seq < 1 {
		return 0, "", head{}, "", nil, fmt.Errorf("line 2: bad seq %q", second[2])
	}
	third := line()
	if len(third) != 3 || third[0] != "part" || third[1] != DeadLettersPath || len(third[2]) != sha256.Size*2 {
		return 0, "", head{}, "", nil, fmt.Errorf("line 3: want part %s <sha256>", DeadLettersPath)
	}
	return version, first[2], h, third[2], data, nil
}

// snap is a snapshot read from the checkout: its header, its body and
// the body of its dead letters' file, and its seal with the bytes the
// seal covers (everything before the seal's line).
type snap struct {
	head         head
	deadSum      string
	body, dead   []byte
	signed, seal []byte
}

// sealPrefix starts the snapshot's last line in a sealed ledger: the
// ledger key's seal over every byte before it (base64).
const sealPrefix = "seal\t"

// cutSeal splits a snapshot's seal line off its end; seal is nil when it
// has none (or one that is not base64: a seal that cannot verify).
func cutSeal(data []byte) (signed, seal []byte) {
	body := bytes.TrimSuffix(data, []byte{'\n'})
	i := bytes.LastIndexByte(body, '\n') + 1
	if !bytes.HasPrefix(body[i:], []byte(sealPrefix)) {
		return data, nil
	}
	seal, err := base64.StdEncoding.DecodeString(string(body[i+len(sealPrefix):]))
	if err != nil || len(seal) == 0 {
		seal = []byte{}
	}
	return data[:i], seal
}

// readSnapshot reads the snapshot and its dead letters, checking the
// header and the dead letters' sha256. why says why it cannot be used: it
// is absent, or was written by another astra; bad that it is not a
// snapshot astra wrote.
func readSnapshot(root string) (sn snap, why string, bad error) {
	data, err := repofs.ReadFile(root, SnapshotPath, maxSnapshot)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sn, "there is no " + SnapshotPath + " yet", nil
	case err != nil:
		return sn, "", err
	case stateCodecErr != nil:
		return sn, "", stateCodecErr
	}
	signed, seal := cutSeal(data)
	version, shape, h, dead, body, err := parseHeader(signed)
	switch {
	case err != nil:
		return sn, "", fmt.Errorf("%s:%s", SnapshotPath, strings.TrimPrefix(err.Error(), "line "))
	case version != snapshotVersion || shape != stateCodec.shape:
		return sn, SnapshotPath + " was written by another version of astra", nil
	}
	sn = snap{head: h, deadSum: dead, body: body, signed: signed, seal: seal}
	sn.dead, err = repofs.ReadFile(root, DeadLettersPath, maxSnapshot)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sn, "", fmt.Errorf("%s names %s, which is missing", SnapshotPath, DeadLettersPath)
	case err != nil:
		return sn, "", err
	case sha(sn.dead) != dead:
		return sn, "", fmt.Errorf("%s is not the file %s names (sha256 %s)", DeadLettersPath, SnapshotPath, dead)
	}
	return sn, "", nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// decode loads the snapshot's state into st.
func (sn snap) decode(st *State) error {
	if err := stateCodec.decode(sn.body, headerLines+1, st, mainSection); err != nil {
		return fmt.Errorf("%s:%s", SnapshotPath, strings.TrimPrefix(err.Error(), "line "))
	}
	if err := stateCodec.decode(sn.dead, 1, st, deadOnly); err != nil {
		return fmt.Errorf("%s:%s", DeadLettersPath, strings.TrimPrefix(err.Error(), "line "))
	}
	st.deadSaved = sn.deadSum // the file on disk is these dead letters
	return nil
}

// unsealed is why a sealed ledger does not use a snapshot whose seal does
// not verify.
const unsealed = "it is not sealed by a listed ledger key"

// checkSeal says why a sealed ledger cannot use sn; "" when its seal
// verifies.
func (sn snap) checkSeal(seals *ledger.Seals) string {
	switch {
	case sn.seal == nil:
		return unsealed + ": it has no seal"
	case seals.CheckSnapshot == nil:
		return unsealed
	}
	if err := seals.CheckSnapshot(sn.signed, sn.seal); err != nil {
		return fmt.Sprintf("%s: %v", unsealed, err)
	}
	return ""
}

// fromSnapshot loads the snapshot and applies the events after its head.
// why says why it cannot (then the caller replays); err is damage found in
// the ledger files read, reported as a replay would report it.
func fromSnapshot(store *ledger.Store, segs []ledger.Segment, now time.Time) (st *State, tail ledger.Tail, why string, err error) {
	root, seals := store.Root(), store.Seals()
	st = New(now)
	sn, why, bad := readSnapshot(root)
	if bad != nil {
		return st, tail, bad.Error(), nil
	}
	if why != "" {
		return st, tail, why, nil
	}
	if seals != nil {
		if why := sn.checkSeal(seals); why != "" {
			return st, tail, why, nil
		}
	}
	h := sn.head
	i := slices.IndexFunc(segs, func(s ledger.Segment) bool { return s.Path == h.file })
	if i < 0 {
		return st, tail, fmt.Sprintf("it follows %s, which is not in the checkout", h.file), nil
	}
	opts := ledger.ScanOptions{Verify: true, SkipOutput: true, Resume: ledger.Tail{Seq: h.seq, Hash: h.hash}, Seals: seals}
	load := func(until int64) (*State, ledger.Tail, error) {
		st := New(now)
		if err := sn.decode(st); err != nil {
			return nil, ledger.Tail{}, err
		}
		st.view(now)
		opts.Until = until
		tail, err := ledger.Scan(root, segs[i:], opts, func(e *ledger.Event) error {
			st.Apply(e)
			return nil
		})
		st.snapHead = h.seq
		return st, tail, err
	}
	st, tail, err = load(0)
	if st == nil {
		return New(now), tail, err.Error(), nil
	}
	var ce *ledger.CorruptError
	if errors.As(err, &ce) && ce.Kind == ledger.ProblemResume {
		return New(now), ledger.Tail{}, fmt.Sprintf("it does not match the ledger: %v", err), nil
	}
	var u *ledger.UnsealedError
	if errors.As(err, &u) && u.Applied {
		// Events after the snapshot's head that the newest seal turned
		// out not to cover were applied: load again up to what is sealed.
		sealed := u.Sealed
		if sealed.Seq < h.seq {
			sealed = ledger.Tail{Seq: h.seq, Hash: h.hash, Segment: segs[i]}
		}
		st, _, err = load(sealed.Seq)
		if err != nil {
			return st, sealed, "", err
		}
		u.Applied, u.Sealed = false, sealed
		return st, sealed, "", u
	}
	return st, tail, "", err
}

// encodeSnapshot is the snapshot of st bound to the ledger line tail, its
// dead letters being the file whose sha256 is dead.
func encodeSnapshot(st *State, tail ledger.Tail, dead string) ([]byte, error) {
	if stateCodecErr != nil {
		return nil, stateCodecErr
	}
	h := head{file: tail.Segment.Path, seq: tail.Seq, hash: tail.Hash}
	buf := make([]byte, 0, 1<<20)
	buf = append(buf, header(snapshotVersion, stateCodec.shape, h, dead)...)
	return stateCodec.encode(buf, st, mainSection), nil
}

// encodeDead is the content of DeadLettersPath for st.
func encodeDead(st *State) []byte { return stateCodec.encode(nil, st, deadOnly) }

// SaveSnapshot writes the snapshot of the journal's state, bound to the
// ledger's last line, its dead letters when they changed, and the list of
// files a sparse checkout needs, each only when it changed; what it writes
// joins Files, for the commit that also holds the events it covers. A dry
// journal writes nothing.
func (j *Journal) SaveSnapshot() error {
	if j.dry || j.tail.Empty() || j.tail.Seq == j.saved.Seq && j.tail.Hash == j.saved.Hash {
		return nil
	}
	if stateCodecErr != nil {
		return stateCodecErr
	}
	if j.st.deadSaved == "" {
		dead := encodeDead(j.st)
		if err := j.writeIfChanged(DeadLettersPath, dead); err != nil {
			return err
		}
		j.st.deadSaved = sha(dead)
	}
	data, err := encodeSnapshot(j.st, j.tail, j.st.deadSaved)
	if err != nil {
		return err
	}
	if seals := j.store.Seals(); seals != nil {
		if data, err = sealSnapshot(seals, data); err != nil {
			return err
		}
	}
	if err := j.writeIfChanged(SnapshotPath, data); err != nil {
		return err
	}
	// The pair goes into the journal's first commit together even when the
	// dead letters' file was not rewritten: a run killed before its commit
	// leaves a pair the branch does not hold, which the next run loads and
	// must commit. Later commits hold it already (see Committed).
	j.pairPending = !j.pairCommitted
	if err := j.writeIfChanged(SparsePath, j.sparse()); err != nil {
		return err
	}
	j.saved = j.tail
	return nil
}

// sealSnapshot adds the seal line to a sealed ledger's snapshot: the
// snapshot names its dead letters' sha256 and the ledger line it is bound
// to, so the seal covers them too.
func sealSnapshot(seals *ledger.Seals, data []byte) ([]byte, error) {
	if seals.SignSnapshot == nil {
		return nil, fmt.Errorf("%s: %w", SnapshotPath, ledger.ErrNoKey)
	}
	seal, err := seals.SignSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("sealing %s: %w", SnapshotPath, err)
	}
	return append(append(append(data, sealPrefix...), base64.StdEncoding.EncodeToString(seal)...), '\n'), nil
}

// writeIfChanged writes a state file unless it holds data already.
func (j *Journal) writeIfChanged(path string, data []byte) error {
	root := j.store.Root()
	if old, err := repofs.ReadFile(root, path, maxSnapshot); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := repofs.WriteFile(root, path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if j.observe != nil {
		j.observe(path, int64(len(data)), data, true, 0)
	}
	j.files = append(j.files, path)
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
	// Unsealed says why a sealed ledger's runs do not use the snapshot
	// (its seal does not verify); "" when they do, or the ledger is not
	// sealed.
	Unsealed string
}

// VerifySnapshot checks that the snapshot equals a replay of the ledger up
// to its head, line for line. A snapshot that cannot be compared (absent,
// written by another version of astra, or a checkout without the ledger's
// start) is not an error: Note says why. A difference is an error naming
// the snapshot's first line that differs. For a sealed store, Unsealed
// says why runs would not use it (they replay instead, so it is not an
// error); the comparison is the same.
func VerifySnapshot(store *ledger.Store) (SnapshotCheck, error) {
	v := NewSnapshotVerifier(store)
	if v.st == nil {
		return v.c, v.err
	}
	if _, err := replay(v.st, store.Unsealed(), v.segs, v.until, nil); err != nil {
		return v.c, err
	}
	return v.Finish()
}

// SnapshotVerifier is VerifySnapshot fed by a scan the caller makes
// anyway: `ledger verify` checks the chain of every file and replays the
// snapshot's month in the same pass, so the month is read once. Apply
// takes the events of the whole ledger in order; Finish compares.
type SnapshotVerifier struct {
	c     SnapshotCheck
	err   error
	sn    snap
	segs  []ledger.Segment // up to the snapshot's head file
	from  int              // the replay's first file (replayStart)
	first int64            // its first seq
	until int64            // the snapshot's head
	st    *State           // nil: nothing to replay (c and err say why)
}

// NewSnapshotVerifier reads the snapshot and checks its head line; when
// there is nothing to compare, Finish says why at once.
func NewSnapshotVerifier(store *ledger.Store) *SnapshotVerifier {
	v := &SnapshotVerifier{}
	root := store.Root()
	sn, why, bad := readSnapshot(root)
	if bad != nil {
		v.err = bad
		return v
	}
	if why != "" {
		v.c.Note = why
		return v
	}
	h := sn.head
	v.sn, v.c.Seq, v.until = sn, h.seq, h.seq
	if seals := store.Seals(); seals != nil {
		v.c.Unsealed = sn.checkSeal(seals)
	}
	segs, err := store.Segments()
	if err != nil {
		v.err = err
		return v
	}
	i := slices.IndexFunc(segs, func(s ledger.Segment) bool { return s.Path == h.file })
	if i < 0 {
		v.err = fmt.Errorf("%s: it follows %s, which is not in the ledger", SnapshotPath, h.file)
		return v
	}
	// The head line must be what the snapshot was bound to.
	_, err = ledger.Scan(root, segs[i:i+1], ledger.ScanOptions{Resume: ledger.Tail{Seq: h.seq, Hash: h.hash}}, func(*ledger.Event) error { return nil })
	if err != nil {
		v.err = fmt.Errorf("%s does not match the ledger: %w", SnapshotPath, err)
		return v
	}
	v.segs = segs[:i+1]
	if v.from, err = replayStart(root, v.segs); err != nil {
		v.err = err
		return v
	}
	first, err := ledger.First(root, v.segs[v.from])
	switch {
	case err != nil:
		v.err = err
		return v
	case first != nil && first.Seq != 1 && first.Event != ledger.LedgerCheckpoint:
		v.c.Note = fmt.Errorf("%w: %s starts at seq %d, and the files before it are not here", ErrIncomplete, v.segs[v.from].Path, first.Seq).Error() + ": not compared"
		return v
	case first != nil:
		v.first = first.Seq
	}
	v.st = New(time.Time{})
	return v
}

// Apply replays e if it is one the snapshot covers.
func (v *SnapshotVerifier) Apply(e *ledger.Event) {
	if v.st != nil && e.Seq >= v.first && e.Seq <= v.until {
		v.st.Apply(e)
	}
}

// Finish compares the snapshot with what was replayed.
func (v *SnapshotVerifier) Finish() (SnapshotCheck, error) {
	if v.st == nil {
		return v.c, v.err
	}
	c, sn := v.c, v.sn
	want, err := encodeSnapshot(v.st, ledger.Tail{Seq: v.until, Hash: sn.head.hash, Segment: v.segs[len(v.segs)-1]}, sn.deadSum)
	if err != nil {
		return c, err
	}
	_, _, _, _, want, _ = parseHeader(want)
	if err := firstDifference(SnapshotPath, headerLines+1, sn.body, want, v.until); err != nil {
		return c, err
	}
	return c, firstDifference(DeadLettersPath, 1, sn.dead, encodeDead(v.st), v.until)
}

// firstDifference names the first line where a state file's body
// (starting at line first) differs from a replay's.
func firstDifference(path string, first int, got, want []byte, seq int64) error {
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
			return fmt.Errorf("%s:%d: differs from a replay of the ledger up to seq %d: the file has %q, the replay %q",
				path, n+first, seq, clip(g), clip(w))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
