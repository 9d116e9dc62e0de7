package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/astra-gitops/astra/internal/ledger"
)

// cancelDir holds a marker per running attempt a person cancelled: the
// attempt's runner, which cannot see the ledger move while its tool runs,
// fetches astra's branch and looks for its key's marker alone.
const cancelDir = "var/cancel"

// cancelMark is a marker's content: the run.cancelled it stands for.
type cancelMark struct {
	Key    string `json:"key"`
	Seq    int64  `json:"seq"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// markerPath is the marker of key, by the sha256 of the key: keys hold
// characters no file name should.
func markerPath(key string) string {
	h := sha256.Sum256([]byte(key))
	return path.Join(cancelDir, hex.EncodeToString(h[:]))
}

// markCancel writes the marker of ev, a recorded run.cancelled of a
// running attempt, to go in the same commit.
func (s *session) markCancel(ev *ledger.Event) error {
	if s.r.opts.DryRun {
		return nil
	}
	data, err := json.Marshal(cancelMark{Key: ev.IdempotencyKey, Seq: ev.Seq, By: ev.By, Reason: ev.Error})
	if err != nil {
		return err
	}
	p := markerPath(ev.IdempotencyKey)
	if err := os.MkdirAll(filepath.Join(s.r.opts.Root, cancelDir), 0o755); err != nil {
		return fmt.Errorf("writing the cancel marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.r.opts.Root, filepath.FromSlash(p)), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the cancel marker: %w", err)
	}
	s.marks = append(s.marks, p)
	return nil
}

// sweepMarks removes the markers whose attempt has ended (or whose key
// is no longer open): the run that records the end, or any later one,
// commits the removal. Called before each commit.
func (s *session) sweepMarks() {
	dir := filepath.Join(s.r.opts.Root, cancelDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("cancel markers under %s/ could not be read: %v", cancelDir, err))
		return
	}
	for _, e := range entries {
		var m cancelMark
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && json.Unmarshal(data, &m) == nil {
			if o := s.state().Open[m.Key]; o != nil && o.Cancelled != nil {
				continue // its attempt has not ended yet
			}
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("cancel marker %s/%s could not be removed: %v", cancelDir, e.Name(), err))
			continue
		}
		s.marks = append(s.marks, path.Join(cancelDir, e.Name()))
	}
}
