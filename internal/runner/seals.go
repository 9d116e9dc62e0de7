package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// A sealed ledger (docs/security.md, "Sealed ledger"): astra's commits
// and the ledger's gzip members carry seals by the ledger key, which only
// the default branch's job holds. A run that records first makes the
// checkout's astra files the newest sealed commit's again (what commits
// by others changed under var/ is put back, their bytes kept under
// var/quarantine/), then moves what follows the ledger's last valid seal
// to var/quarantine/ (a writer's or a tool's append), and records both as
// ledger.tampered in its first commit. Tier 2 then stops until a person
// with the trust_resume permission acknowledges it (astra trust resume).

// store is the ledger as this run reads and appends to it: sealed when
// the repository's ledger is (Options.Seals).
func (r *Runner) store() *ledger.Store {
	return ledger.Open(r.opts.Root, r.opts.SegmentSize).Sealed(r.opts.Seals)
}

// sealedHistory is gitops.Repo with commit sealing.
type sealedHistory interface {
	NewestSealed(ctx context.Context) (*gitops.SealedWalk, error)
	RestoreCommitted(commit string, paths []string, quarantine string) ([]string, error)
	ReadSeen() (gitops.Seen, error)
	WriteSeen(s gitops.Seen) error
	Behind(ctx context.Context, seen gitops.Seen, commit string) (bool, error)
}

// sealWork is what a session found of tampering before its journal
// opened: the events to record and the files to commit with them.
type sealWork struct {
	events []*ledger.Event
	files  []string // restored and quarantined files, committed with the run's first commit
	keyed  bool     // no commit of the branch is sealed: this run starts sealing
}

// tamperDetail is the detail of ledger.tampered.
type tamperDetail struct {
	RestoredFrom string                `json:"restored_from,omitempty"` // the newest sealed commit, whose files were put back
	Commits      []foreignCommit       `json:"commits,omitempty"`       // the commits after it, newest first
	Files        []string              `json:"files,omitempty"`         // the sealed files they changed
	Unsealed     []ledger.UnsealedFile `json:"unsealed,omitempty"`      // what followed the ledger's last valid seal
	Why          string                `json:"why,omitempty"`           // why the first unsealed member does not count
	Breaches     []state.Breach        `json:"breaches,omitempty"`      // events that break the ledger's rules (rules.go)
	Kept         []string              `json:"kept,omitempty"`          // where the bytes taken out are
}

type foreignCommit struct {
	Commit  string    `json:"commit"`
	Author  string    `json:"author"`
	When    time.Time `json:"when"`
	Subject string    `json:"subject,omitempty"`
	Files   []string  `json:"files,omitempty"`
}

// checkSeals makes the checkout's sealed files the newest sealed
// commit's, before the ledger is replayed.
func (s *session) checkSeals(ctx context.Context) error {
	r := s.r
	h, ok := r.git.(sealedHistory)
	if r.opts.Seals == nil || r.opts.DryRun || !ok {
		return nil
	}
	w, err := h.NewestSealed(ctx)
	if err != nil {
		return errkind.Default(err, errkind.ErrInfra)
	}
	if err := s.checkRewound(ctx, h, w.Commit); err != nil {
		return err
	}
	switch {
	case w.Commit == "" && len(w.After) == 0: // an unborn branch
		return nil
	case w.Commit == "" && w.Shallow:
		s.report.Warnings = append(s.report.Warnings, "this shallow clone holds no sealed commit and has no remote to fetch more history from: its astra files were not checked against the newest sealed commit")
		return nil
	case w.Commit == "":
		s.seals.keyed = true
		return nil
	case w.Same():
		return nil
	}
	kept, err := h.RestoreCommitted(w.Commit, w.Changed, ledger.QuarantineDir)
	if err != nil {
		return errkind.Infraf("putting back astra's files as the newest sealed commit %.12s has them: %w", w.Commit, err)
	}
	d := tamperDetail{RestoredFrom: w.Commit, Files: w.Changed, Kept: kept}
	var authors []string
	for _, f := range w.After {
		if len(f.Changed) == 0 {
			continue
		}
		d.Commits = append(d.Commits, foreignCommit{Commit: f.Commit, Author: f.Author, When: f.When, Subject: f.Subject, Files: f.Changed})
		authors = append(authors, fmt.Sprintf("%.12s by %s", f.Commit, f.Author))
	}
	why := fmt.Sprintf("%d commit(s) astra did not seal changed its files (%s): %s put back as the newest sealed commit %.12s has them",
		len(d.Commits), strings.Join(authors, ", "), strings.Join(w.Changed, ", "), w.Commit)
	s.noteTamper(d, why, append(w.Changed, kept...))
	return nil
}

// checkRewound refuses a remote whose newest sealed commit is behind
// what this checkout saw (a checkout that lives on remembers it): the
// branch was pushed back, and the ledger a run would record into is the
// rewound one. Nothing is recorded.
func (s *session) checkRewound(ctx context.Context, h sealedHistory, newest string) error {
	seen, err := h.ReadSeen()
	if err != nil {
		return errkind.Usagef("%w", err)
	}
	behind := seen.Commit != "" && newest == ""
	if seen.Commit != "" && newest != "" {
		if behind, err = h.Behind(ctx, seen, newest); err != nil {
			return errkind.Default(err, errkind.ErrInfra)
		}
	}
	if !behind {
		return nil
	}
	b := s.r.git.Branch()
	now := "has no sealed commit"
	if newest != "" {
		now = fmt.Sprintf("has %.12s, which does not follow it", newest)
	}
	return &errkind.Error{Kind: errkind.ErrUsage,
		Err: fmt.Errorf("%s was pushed back: this checkout saw its sealed commit %.12s, and the branch now %s; astra records nothing into a rewound ledger", b, seen.Commit, now),
		Hint: fmt.Sprintf("Push the commit this checkout saw back (git push --force-with-lease origin %s:%s; it is in this checkout), and forbid force pushes to %s (astra doctor). "+
			"If the rewind was meant, accept it by removing .git/astra/seen.", seen.Commit, b, b)}
}

// rememberSeen notes the commit a run pushed, so that a rewind of the
// remote behind it is refused (checkRewound).
func (s *session) rememberSeen(commit string) {
	h, ok := s.r.git.(sealedHistory)
	if !ok || s.r.opts.Seals == nil || commit == "" {
		return
	}
	if err := h.WriteSeen(gitops.Seen{Commit: commit}); err != nil {
		s.report.Warnings = append(s.report.Warnings, "remembering the commit pushed: "+err.Error())
	}
}

// unsealed handles what Replay found after the ledger's last valid seal:
// those bytes go to var/quarantine/ and the ledger is replayed again. A
// dry run says so and goes on with the sealed part.
func (s *session) unsealed(store *ledger.Store, st *state.State, tail ledger.Tail, err error) (*state.State, ledger.Tail, error) {
	var u *ledger.UnsealedError
	if !errors.As(err, &u) {
		return st, tail, err
	}
	if s.r.opts.DryRun {
		s.report.Warnings = append(s.report.Warnings, "the ledger holds lines no valid seal covers, which astra did not write; a run that records moves them to "+
			ledger.QuarantineDir+" and records ledger.tampered: "+u.Error())
		return st, tail, nil
	}
	dir := path.Join(ledger.QuarantineDir, s.now.Format("20060102T150405Z"))
	changed, qerr := ledger.Quarantine(s.r.opts.Root, u, dir)
	if qerr != nil {
		return st, tail, errkind.Ledger(fmt.Errorf("%w; moving those lines to %s failed: %w", err, dir, qerr), "")
	}
	s.noteTamper(tamperDetail{Unsealed: u.Files, Why: u.Reason, Kept: changed}, "lines astra did not seal were moved to "+dir+": "+u.Error(), changed)
	return state.Replay(store, s.now)
}

func (s *session) noteTamper(d tamperDetail, why string, files []string) {
	detail, _ := json.Marshal(d)
	s.seals.events = append(s.seals.events, &ledger.Event{Event: ledger.LedgerTampered, Status: ledger.StatusRestored, Detail: detail,
		Error: s.r.opts.Redact.String(why)})
	s.seals.files = append(s.seals.files, files...)
	s.report.Warnings = append(s.report.Warnings, "the ledger was tampered with: "+s.r.opts.Redact.String(why)+
		"; tier 2 stops until a person with the trust_resume permission runs `astra trust resume --reason ...`")
}

// recordSeals records what checkSeals and unsealed found, once the
// journal is open. A branch with no sealed commit whose ledger holds
// seals had its sealed history replaced: nothing can restore it here.
func (s *session) recordSeals(tail ledger.Tail) error {
	if s.seals.keyed {
		if tail.Seal != "" {
			return &errkind.Error{Kind: errkind.ErrLedger, Err: fmt.Errorf("the ledger on %s holds seals, but no commit of the branch is sealed: its history was replaced", s.r.git.Branch()),
				Hint: "Push the branch back as it was from a clone that has its newest sealed commit (git push --force-with-lease origin <commit>:" + s.r.git.Branch() + "); nothing was recorded."}
		}
		d, _ := json.Marshal(map[string]string{"branch": s.r.git.Branch()})
		s.seals.events = append([]*ledger.Event{{Event: ledger.LedgerKeyed, Status: ledger.StatusOK, Detail: d,
			Error: "the first run holding the ledger key on this branch: its commits and the ledger are sealed from here on"}}, s.seals.events...)
	}
	if len(s.seals.events) == 0 {
		return nil
	}
	return s.record(s.seals.events...)
}

// admitUntampered stops tier 2 while tampering recorded is not
// acknowledged.
func (s *session) admitUntampered(t *task) (bool, error) {
	if len(s.state().Tampered) == 0 {
		return true, nil
	}
	return false, s.skip(t, ledger.ReasonTampered, "tier 2 stops after tampering with the ledger was found and undone (ledger.tampered): "+
		"a person with the trust_resume permission checks what happened, then runs `astra trust resume --reason ...`")
}

// TrustResume is `astra trust resume`: a person acknowledges the
// tampering recorded, and tier 2 runs again. It returns how many
// ledger.tampered events it acknowledged.
func (r *Runner) TrustResume(ctx context.Context, reason string, id identity.Identity) (*Report, int, error) {
	var n int
	rep, err := r.record(ctx, "trust resume", func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbTrustResume, "tier 2 after tampering", id, nil); err != nil {
			return nil, err
		}
		n = len(s.state().Tampered)
		if n == 0 {
			return nil, errkind.Usagef("no tampering is recorded since tier 2 last resumed: nothing to acknowledge")
		}
		d, _ := json.Marshal(map[string]string{"reason": reason})
		return []*ledger.Event{{Event: ledger.TrustResumed, Status: ledger.StatusResumed, By: by(id), Detail: d,
			Error: fmt.Sprintf("%d tampering record(s) acknowledged: %s", n, reason)}}, nil
	})
	return rep, n, err
}
