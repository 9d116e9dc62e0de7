package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
)

// cancelDir holds a marker per running attempt a person cancelled: the
// attempt's runner, which cannot see the ledger move while its tool runs,
// fetches astra's branch and looks for its key's marker alone.
const cancelDir = "var/cancel"

// cancelMark is a marker's content: the run.cancelled it stands for.
type cancelMark struct {
	Key string `json:"key"`
	// Attempt and ClaimedAt name the claim cancelled: a later run of the
	// same key (a backfill) is another claim, which an old marker pushed
	// back onto the branch does not stop.
	Attempt   int       `json:"attempt"`
	ClaimedAt time.Time `json:"claimed_at"`
	Seq       int64     `json:"seq"`
	By        string    `json:"by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	// Seal is the ledger key's signature of the rest, in a sealed ledger:
	// a marker a writer pushed would stop a run in a person's name.
	Seal string `json:"seal,omitempty"`
}

// signed returns m's bytes sealed with the ledger key when the run can
// sign. The seal reuses the spill seal's domain under a name no spill can
// have (a git ref holds no ':').
func (s *session) signedMark(m cancelMark) ([]byte, error) {
	m.Seal = ""
	if sign := s.r.opts.SignSpill; sign != nil {
		body, _ := json.Marshal(m)
		sig, err := sign("cancel:"+m.Key, body)
		if err != nil {
			return nil, err
		}
		m.Seal = string(sig)
	}
	data, _ := json.Marshal(m)
	return append(data, '\n'), nil
}

// checkMark checks m's seal in a sealed ledger; nil when it holds, or
// when the ledger is not sealed (a writer can then forge any line, and
// the accepted risk says so).
func (s *session) checkMark(m cancelMark) error {
	verify := s.r.opts.VerifySpill
	if verify == nil {
		return nil
	}
	seal := m.Seal
	m.Seal = ""
	body, _ := json.Marshal(m)
	if err := verify("cancel:"+m.Key, body, []byte(seal)); err != nil {
		return fmt.Errorf("the cancel marker of %s carries no valid seal of the ledger key, so no person is known to have cancelled it: ignored", m.Key)
	}
	return nil
}

// markerPath is the marker of key, by the sha256 of the key: keys hold
// characters no file name should.
func markerPath(key string) string {
	h := sha256.Sum256([]byte(key))
	return path.Join(cancelDir, hex.EncodeToString(h[:]))
}

// syncMarks makes the markers on astra's branch those of the state: one
// for each open claim a person cancelled (written with its run.cancelled,
// and with the right seq again after a race), none for a key whose
// attempt has ended, in the checkout or the branch's tip (a state
// branch's are not in the worktree). So the run that records the end,
// or any later one, commits the removal. Called before each commit.
func (s *session) syncMarks() {
	want := map[string][]byte{}
	for key, o := range s.state().Open {
		if c := o.Cancelled; c != nil {
			data, err := s.signedMark(cancelMark{Key: key, Attempt: o.Attempt, ClaimedAt: o.ClaimedAt, Seq: c.Seq, By: c.By, Reason: c.Reason})
			if err != nil {
				s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("the cancel marker of %s could not be sealed (its runner will not see the cancel): %v", key, err))
				continue
			}
			want[markerPath(key)] = data
		}
	}
	have := map[string][]byte{}
	if peek, ok := s.r.git.(cancelPeek); ok {
		if head, err := s.r.git.Head(); err == nil && head != "" {
			files, err := peek.Files(head, cancelDir+"/")
			if err != nil {
				s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("the cancel markers of astra's branch could not be read (none is removed from it): %v", err))
			} else {
				have = files
			}
		}
	}
	dir := filepath.Join(s.r.opts.Root, cancelDir)
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// Not astra's directory: a link (or a file) someone committed
		// there. It is removed, never followed: the sweep below would
		// delete what a link leads to, outside the checkout.
		if err := os.Remove(dir); err != nil {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s is not a directory and could not be removed (no cancel marker is written): %v", cancelDir, err))
			return
		}
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s was not astra's directory of cancel markers (%s): removed, not followed", cancelDir, fi.Mode().Type()))
		s.mark(cancelDir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("cancel markers under %s/ could not be read: %v", cancelDir, err))
	}
	for _, e := range entries {
		if e.IsDir() {
			continue // not a marker
		}
		if _, ok := have[path.Join(cancelDir, e.Name())]; !ok {
			have[path.Join(cancelDir, e.Name())] = nil // a link among them is removed, not followed
		}
	}
	for p, data := range want {
		full := filepath.Join(s.r.opts.Root, filepath.FromSlash(p))
		fi, lerr := os.Lstat(full)
		if lerr == nil && fi.Mode().IsRegular() {
			if cur, err := os.ReadFile(full); err == nil && bytes.Equal(cur, data) && bytes.Equal(have[p], data) {
				continue
			}
		}
		err := os.MkdirAll(dir, 0o755)
		if err == nil && lerr == nil && !fi.Mode().IsRegular() {
			err = os.RemoveAll(full) // a link or directory in the marker's place: never written through
		}
		if err == nil {
			err = os.WriteFile(full, data, 0o644)
		}
		if err != nil {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("cancel marker %s could not be written (the attempt's runner will not see the cancel): %v", p, err))
			continue
		}
		s.mark(p)
	}
	for p := range have {
		if _, ok := want[p]; ok || !isMarker(p) {
			continue
		}
		if err := os.Remove(filepath.Join(s.r.opts.Root, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("cancel marker %s could not be removed: %v", p, err))
			continue
		}
		s.mark(p)
	}
}

// isMarker reports whether p can be a marker: a sha256 in hex, directly
// in var/cancel. Only those are swept.
func isMarker(p string) bool {
	name, ok := strings.CutPrefix(p, cancelDir+"/")
	if !ok || len(name) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// mark lists a marker path among the files to commit, once.
func (s *session) mark(p string) {
	if !slices.Contains(s.marks, p) {
		s.marks = append(s.marks, p)
	}
}

// cancelPeek reads astra's branch as the remote has it now, beside the
// checkout (gitops.Repo).
type cancelPeek interface {
	RemoteTip(ctx context.Context, branch string) (string, error)
	FetchBranch(ctx context.Context, branch string) (string, error)
	Files(commit string, paths ...string) (map[string][]byte, error)
}

// errCancelled is why a tool's context ends when a person cancelled its
// run.
var errCancelled = errors.New("cancelled by a person (astra cancel)")

// watchCancel looks for a cancel of t while its tool runs: every
// defaults.cancel_poll it fetches astra's branch and reads t's marker
// alone; once the marker is there it ends the returned context, which
// stops the tool (its process group gets TERM, then KILL after the
// grace). A fetch that fails is a warning, never a stop. stop ends the
// watch and returns the cancel it found, if it stopped the tool.
func (s *session) watchCancel(ctx context.Context, t *task) (tctx context.Context, stop func() *cancelMark) {
	every := s.r.cfg.Policies.Defaults.CancelPollD()
	peek, ok := s.r.git.(cancelPeek)
	if every <= 0 || !ok || s.r.git == nil {
		return ctx, func() *cancelMark { return nil }
	}
	s.mu.Lock()
	o := s.state().Open[t.key]
	s.mu.Unlock()
	if o == nil {
		return ctx, func() *cancelMark { return nil } // no claim recorded: nothing a cancel can name
	}
	claim := cancelMark{Key: t.key, Attempt: o.Attempt, ClaimedAt: o.ClaimedAt}
	tctx, cancel := context.WithCancelCause(ctx)
	wctx, quit := context.WithCancel(gitops.Watch(tctx))
	var found *cancelMark
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		warned, seen := false, ""
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			m, tip, err := s.peekCancel(wctx, peek, claim, seen)
			if tip != "" {
				seen = tip
			}
			switch {
			case errors.Is(err, gitops.ErrNoRemote):
				return // a checkout without a remote: no cancel can reach it
			case err != nil && wctx.Err() == nil && !warned:
				warned = true
				s.mu.Lock()
				s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s: looking for a cancel of %s failed (the run goes on; the next look may see it): %s",
					t.sched.Name, t.key, s.r.opts.Redact.String(err.Error())))
				s.mu.Unlock()
			case m != nil:
				found = m
				cancel(errCancelled)
				return
			}
		}
	}()
	return tctx, func() *cancelMark {
		quit()
		<-done
		cancel(nil)
		return found
	}
}

// peekCancel reads the marker of claim (its key, attempt and time) at the
// tip of astra's branch on the remote; nil when there is none. It returns the tip it read, or "" when
// it could not: a tip already read (seen) is not fetched again. Only the
// fetch holds s.mu, as it moves the refs a commit or push of another
// task's outcome uses; asking for the tip does not, so a remote that
// hangs delays no other task's recording.
func (s *session) peekCancel(ctx context.Context, peek cancelPeek, claim cancelMark, seen string) (*cancelMark, string, error) {
	tip, err := peek.RemoteTip(ctx, s.r.git.Branch())
	if err != nil || tip == "" || tip == seen {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tip, err = peek.FetchBranch(ctx, s.r.git.Branch())
	if err != nil || tip == "" {
		return nil, "", err
	}
	p := markerPath(claim.Key)
	files, err := peek.Files(tip, p)
	if err != nil {
		return nil, "", err // read again next look
	}
	if files[p] == nil {
		return nil, tip, nil
	}
	var m cancelMark
	if err := json.Unmarshal(files[p], &m); err != nil {
		return nil, tip, fmt.Errorf("reading the cancel marker %s: %w", p, err)
	}
	if m.Key != claim.Key {
		return nil, tip, nil
	}
	if err := s.checkMark(m); err != nil {
		return nil, tip, err
	}
	if m.Attempt != claim.Attempt || !m.ClaimedAt.Equal(claim.ClaimedAt) {
		return nil, tip, nil // another claim's: an earlier run of the key
	}
	return &m, tip, nil
}

// stopped is res for an attempt stopped because a person cancelled it:
// failed, reason cancelled, with who and why; what the tool used and
// wrote is kept.
func stopped(res executor.Result, m *cancelMark) executor.Result {
	res.Status, res.Reason, res.Exceeded = executor.StatusFailed, ledger.ReasonCancelled, ""
	res.Error = fmt.Sprintf("cancelled by %s: %s; the tool was stopped", m.By, m.Reason)
	return res
}
