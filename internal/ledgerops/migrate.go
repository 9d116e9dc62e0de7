package ledgerops

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Mover is the git side of moving the ledger between branches
// (gitops.Repo): branches of the remote as a whole, never the checkout.
type Mover interface {
	FetchBranch(ctx context.Context, branch string) (string, error)
	Files(commit string, paths ...string) (map[string][]byte, error)
	PushFiles(ctx context.Context, branch, parent string, paths []string, files map[string][]byte, msg string) (string, error)
}

// MigrateOptions say where the ledger moves.
type MigrateOptions struct {
	From, To    string // branches of the remote
	Clock       Clock
	SegmentSize int64
	RunnerID    string
	Seals       *ledger.Seals // a sealed ledger's (nil: not sealed)
	By          string        // who moves it (the migrate permission), recorded
}

// What becomes of the branch the ledger leaves (Migration.Left).
const (
	// LeftRetired: it ends with the same ledger.migrated event, so a run
	// still pointed at it refuses to record there.
	LeftRetired = "retired"
	// LeftFrozen: it refuses astra's pushes (protected), so it keeps the
	// ledger exactly as it was at the source commit; nobody can add to it.
	LeftFrozen = "frozen"
)

// Migration is what a move of the ledger did.
type Migration struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source_commit"` // the commit of From the ledger was taken from
	Commit string `json:"commit"`        // the commit of To that holds it now
	Events int64  `json:"events"`        // ledger events on To, ledger.migrated included
	Seq    int64  `json:"seq,omitempty"` // seq of the ledger.migrated event
	Left   string `json:"left,omitempty"`
	// Already: the ledger had moved to To before; nothing changed.
	Already bool `json:"already,omitempty"`
}

// SourceBranch is the branch a move takes the ledger from when the
// caller does not say: ledger_branch (setting), or the checked-out branch
// when that is unset or names the target (a move back).
func SourceBranch(setting, checkedOut, to string) (string, error) {
	from := setting
	if from == "" || from == to {
		from = checkedOut
	}
	if from == "" {
		return "", errkind.Usagef("HEAD is detached: say which branch holds the ledger with --from")
	}
	return from, nil
}

// migrateRounds bounds how often a move starts over because someone
// pushed to one of the branches meanwhile.
const migrateRounds = 5

// Migrate moves the ledger (var/schedules, the approval log, agent memory:
// everything a run materializes from astra's branch) from branch From of
// the remote to branch To, history, checkpoints and all, and records the
// move once, as ledger.migrated (from, to, and the commit of From it was
// taken from).
//
// From takes the event first, in a compare-and-swap push: a run that
// pushed to From meanwhile makes the move start over instead of being left
// behind, and a run still pointed at From afterwards refuses to record
// there. When From refuses astra's pushes (a protected main), it keeps the
// ledger as it was, frozen. Then To gets the same ledger: as a new branch,
// or on top of a copy an earlier move left there, which the ledger
// continues. If To cannot be written after From took the event, the move
// is cancelled and that is recorded on From (ledger.migrated, status
// failed). A move that failed halfway completes when run again; one that
// is done reports Already. The checkout is never touched.
func Migrate(ctx context.Context, g Mover, o MigrateOptions) (*Migration, error) {
	if o.From == o.To {
		return nil, errkind.Usagef("the ledger is on %s already", o.To)
	}
	for round := 1; ; round++ {
		m, err := migrate(ctx, g, o)
		if errors.Is(err, gitops.ErrRejected) {
			if round < migrateRounds {
				continue // someone pushed meanwhile: take the branches again
			}
			err = errkind.Infraf("%s and %s kept changing while the ledger moved: %w; run the migration again, it continues where it stopped", o.From, o.To, err)
		}
		return m, errkind.Default(err, errkind.ErrInfra)
	}
}

// migrate is one attempt at a move.
func migrate(ctx context.Context, g Mover, o MigrateOptions) (*Migration, error) {
	source, err := g.FetchBranch(ctx, o.From)
	if err != nil {
		return nil, errkind.Infraf("fetching %s: %w", o.From, err)
	}
	if source == "" {
		return nil, errkind.Usagef("the remote has no branch %s: there is no ledger there to move", o.From)
	}
	src, err := readLedger(g, o.From, source, o)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if src.events == 0 {
		return nil, errkind.Usagef("%s (commit %.12s) holds no ledger in %s: there is nothing to move (the first run on %s starts a new one)",
			o.From, source, ledger.Dir, o.To)
	}
	m := &Migration{From: o.From, To: o.To, Source: source}
	retired := "" // the commit of From that ends with this move's event
	switch home := src.st.Home(); {
	case home == o.To && src.st.Moved.From == o.From:
		// From took the event in an earlier attempt; To may lack it.
		retired, m.Left = source, LeftRetired
		m.Source, m.Seq = src.st.Moved.Commit, src.st.Moved.Seq
	case home != "" && home != o.From:
		return nil, errkind.Usagef("the ledger on %s moved to %s at %s: move it from there (--from %s)",
			o.From, home, src.st.Moved.At.UTC().Format(time.RFC3339), home)
	}

	target, err := g.FetchBranch(ctx, o.To)
	if err != nil {
		return nil, errkind.Infraf("fetching %s: %w", o.To, err)
	}
	if events, err := checkTarget(g, o, target, src); events > 0 || err != nil {
		m.Already, m.Commit, m.Events = err == nil, target, events
		return m, err
	}

	j := o.Clock.journal(src.store, src.st, src.tail)
	anchors := []ledger.Anchor{src.tail.Anchor()}
	if retired == "" {
		detail, _ := json.Marshal(state.MigrationDetail{From: o.From, To: o.To, Commit: source})
		ev := &ledger.Event{Event: ledger.LedgerMigrated, Status: ledger.StatusOK, Runner: o.RunnerID, By: o.By, Detail: detail,
			Error: fmt.Sprintf("the ledger moves from %s (commit %.12s) to %s", o.From, source, o.To)}
		if err := src.record(j, ev); err != nil {
			return nil, err
		}
		m.Seq, anchors = ev.Seq, j.Anchors()
		// From first, as a compare-and-swap: a run that pushed meanwhile
		// makes this fail with ErrRejected, and the move starts over.
		msg := fmt.Sprintf("astra: the ledger moves to %s\n\nRecorded as ledger.migrated; astra records nothing more on %s.\n\n%s",
			o.To, o.From, ledger.FormatAnchors(anchors))
		switch retired, err = g.PushFiles(ctx, o.From, source, Paths, src.files, msg); {
		case err == nil:
			m.Left = LeftRetired
		case errors.Is(err, gitops.ErrProtected):
			m.Left = LeftFrozen // nobody can add to it, so nothing can be left behind there
		case errors.Is(err, gitops.ErrRejected):
			return nil, err
		default:
			return nil, errkind.Infraf("recording the move on %s: %w; nothing was moved", o.From, err)
		}
	}
	msg := fmt.Sprintf("astra: the ledger moves here from %s\n\nTaken from %s at %.12s; recorded as ledger.migrated.\n\n%s",
		o.From, o.From, m.Source, ledger.FormatAnchors(anchors))
	commit, err := g.PushFiles(ctx, o.To, target, Paths, src.files, msg)
	switch {
	case errors.Is(err, gitops.ErrRejected):
		return nil, err
	case err != nil:
		return nil, cancelMove(ctx, g, o, src, j, retired, err)
	}
	m.Commit, m.Events = commit, src.events
	return m, nil
}

// checkTarget makes sure that moving to To loses nothing: To has no
// ledger, or a copy an earlier move left there that the ledger on From
// continues (frozen or retired). done, the ledger's events on To, is
// non-zero when the ledger moved to To before and continues From's there.
func checkTarget(g Mover, o MigrateOptions, target string, src *ledgerTree) (done int64, err error) {
	if target == "" {
		return 0, nil
	}
	dst, err := readLedger(g, o.To, target, o)
	if err != nil {
		return 0, err
	}
	defer dst.close()
	switch {
	case dst.events == 0:
		return 0, nil
	case dst.st.Home() == o.To:
		if ok, err := dst.has(src.tail); ok || err != nil {
			return dst.events, err
		}
	default:
		if ok, err := src.has(dst.tail); ok || err != nil {
			return 0, err
		}
	}
	return 0, errkind.Usagef("%s already holds another ledger (newest event seq %d, at %s) that the one on %s does not continue: "+
		"astra will not overwrite it. If it is a leftover, delete that branch (`git push origin --delete %s`) and move again.",
		o.To, dst.tail.Seq, dst.tail.TS.UTC().Format(time.RFC3339), o.From, o.To)
}

// cancelMove records on From, which took the move's event (at commit
// retired; "" when it did not), that the move did not reach To, so runs
// go on recording there; it returns cause saying so.
func cancelMove(ctx context.Context, g Mover, o MigrateOptions, src *ledgerTree, j *state.Journal, retired string, cause error) error {
	kind, hint := errkind.ErrInfra, ""
	if errors.Is(cause, gitops.ErrProtected) {
		kind, hint = errkind.ErrUsage, fmt.Sprintf("The remote refuses astra's pushes to %s: allow them (branch protection, rulesets), then move again.", o.To)
	}
	if retired == "" {
		return &errkind.Error{Kind: kind, Hint: hint, Err: fmt.Errorf("moving the ledger to %s: %w; nothing was moved", o.To, cause)}
	}
	detail, _ := json.Marshal(state.MigrationDetail{From: o.From, To: o.To, Commit: src.st.Moved.Commit})
	ev := &ledger.Event{Event: ledger.LedgerMigrated, Status: ledger.StatusFailed, Runner: o.RunnerID, By: o.By, Detail: detail,
		Error: fmt.Sprintf("cancelled: %s did not take the ledger (%v); it stays on %s", o.To, cause, o.From)}
	err := src.record(j, ev)
	if err == nil {
		msg := fmt.Sprintf("astra: the ledger stays on %s\n\nThe move to %s was cancelled; recorded as ledger.migrated, status failed.\n\n%s",
			o.From, o.To, ledger.FormatAnchors(j.Anchors()))
		_, err = g.PushFiles(ctx, o.From, retired, Paths, src.files, msg)
	}
	if err != nil {
		return &errkind.Error{Kind: errkind.ErrInfra, Err: fmt.Errorf("moving the ledger to %s: %w; and recording on %s that the move was cancelled failed: %v", o.To, cause, o.From, err),
			Hint: fmt.Sprintf("%s now says the ledger moved to %s, so runs refuse to record there. Run `astra ledger migrate --to-branch %s` again "+
				"once %s takes astra's pushes: it completes the move.", o.From, o.To, o.To, o.To)}
	}
	return &errkind.Error{Kind: kind, Hint: hint, Err: fmt.Errorf("moving the ledger to %s: %w; the move was cancelled (recorded on %s as ledger.migrated, status failed) and the ledger stays on %s",
		o.To, cause, o.From, o.From)}
}

// ledgerTree is a branch's ledger files, written out to a temporary
// directory, verified and replayed.
type ledgerTree struct {
	root   string
	store  *ledger.Store
	files  map[string][]byte // by slash path
	events int64             // lines of the ledger (var/schedules)
	st     *state.State
	tail   ledger.Tail
	segs   []ledger.Segment
}

func (t *ledgerTree) close() { _ = os.RemoveAll(t.root) }

// readLedger writes the ledger files of commit (on branch) out, verifies
// every log and replays the ledger. The caller closes it.
func readLedger(g Mover, branch, commit string, o MigrateOptions) (*ledgerTree, error) {
	files, err := g.Files(commit, Paths...)
	if err != nil {
		return nil, errkind.Infraf("reading the ledger of %s: %w", branch, err)
	}
	root, err := os.MkdirTemp("", "astra-ledger-")
	if err != nil {
		return nil, errkind.Infraf("%w", err)
	}
	t := &ledgerTree{root: root, files: files}
	if err := t.load(branch, commit, o); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *ledgerTree) load(branch, commit string, o MigrateOptions) error {
	for p, data := range t.files {
		full := filepath.Join(t.root, filepath.FromSlash(p))
		err := os.MkdirAll(filepath.Dir(full), 0o755)
		if err == nil {
			err = os.WriteFile(full, data, 0o644)
		}
		if err != nil {
			return errkind.Infraf("%w", err)
		}
	}
	t.store = ledger.Open(t.root, o.SegmentSize).Sealed(o.Seals)
	main := t.store
	for _, s := range []*ledger.Store{main, ledger.OpenApprovalLog(t.root), ledger.OpenDir(t.root, state.MemoryDir, 0)} {
		segs, err := s.Segments()
		var events int64
		if err == nil {
			res, verr := ledger.Verify(t.root, segs)
			events, err = res.Events, verr
		}
		if err != nil {
			return errkind.Ledger(fmt.Errorf("the ledger on %s (commit %.12s) is damaged: %w", branch, commit, err),
				"Nothing was moved. Check that branch out, run `astra ledger verify`, and repair or restore the ledger there first.")
		}
		if s == main {
			t.segs, t.events = segs, events
		}
	}
	var err error
	if t.st, t.tail, err = state.Replay(main, o.Clock.now()); err != nil {
		return errkind.Ledger(err, "")
	}
	return nil
}

// record appends ev to the ledger (a new month starts with a checkpoint)
// and reloads the files to push.
func (t *ledgerTree) record(j *state.Journal, ev *ledger.Event) error {
	prev := t.tail.Seq
	if r := j.Recorded(); len(r) > 0 {
		prev = r[len(r)-1].Seq
	}
	if err := j.Record(ev); err != nil {
		return errkind.Ledger(err, "")
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(t.root, p)
		if err == nil {
			files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		}
		return err
	})
	if err == nil {
		t.segs, err = t.store.Segments()
	}
	if err != nil {
		return errkind.Infraf("%w", err)
	}
	t.files, t.events = files, t.events+ev.Seq-prev // a new month's checkpoint is a line too
	return nil
}

// has reports whether this ledger holds the line tail names (its seq and
// hash): whether it is, or continues, the ledger tail ends.
func (t *ledgerTree) has(tail ledger.Tail) (bool, error) {
	switch {
	case tail.Empty():
		return true, nil
	case tail.Seq > t.tail.Seq:
		return false, nil
	case tail.Seq == t.tail.Seq:
		return tail.Hash == t.tail.Hash, nil
	}
	h, err := t.lineHash(tail.Seq)
	return h == tail.Hash, err
}

// lineHash is the chain hash of the line with seq, "" when there is none.
func (t *ledgerTree) lineHash(seq int64) (string, error) {
	files := make([]string, len(t.segs))
	for i, s := range t.segs {
		files[i] = filepath.Join(t.root, filepath.FromSlash(s.Path))
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(ledger.Cat(pw, files...)) }()
	defer pr.Close()
	br := bufio.NewReader(pr)
	for n, first := int64(0), int64(-1); ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return "", err
		}
		line = line[:len(line)-1]
		if first < 0 {
			var e ledger.Event
			if err := ledger.Unmarshal(line, &e); err != nil {
				return "", err
			}
			first = e.Seq
		}
		if first+n == seq {
			sum := sha256.Sum256(line)
			return hex.EncodeToString(sum[:]), nil
		}
	}
}
