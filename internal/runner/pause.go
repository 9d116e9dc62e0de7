package runner

import (
	"context"
	"encoding/json"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
)

// PauseAll is `astra pause --all` (stop true) and `astra resume --all`
// (stop false): the emergency stop. While it holds, every gate skips
// (reason paused), so run-due, run, trigger and plan start nothing; the
// commands that only read, and resuming, still work.
func (r *Runner) PauseAll(ctx context.Context, stop bool, reason string, id identity.Identity) (*Report, error) {
	what, kind, status := "resume every run", ledger.AstraResumed, ledger.StatusResumed
	if stop {
		what, kind, status = "pause every run", ledger.AstraPaused, ledger.StatusPaused
	}
	return r.record(ctx, what, func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbPause, "every run", id, nil); err != nil {
			return nil, err
		}
		switch cur := s.state().Stopped; {
		case stop && cur != nil:
			return nil, errkind.Usagef("astra is already paused, by %s: %s", cur.By, cur.Reason)
		case !stop && cur == nil:
			return nil, errkind.Usagef("astra is not paused: nothing to resume")
		}
		d, _ := json.Marshal(map[string]string{"reason": reason})
		return []*ledger.Event{{Event: kind, Status: status, By: by(id), Detail: d, Error: reason}}, nil
	})
}
