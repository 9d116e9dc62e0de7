// Package approval reads, writes and signs approval tokens:
// var/approvals/pending/<schedule_id>.token, one file per schedule.
//
// A token is evidence, not authority: the ledger records the hash of the
// exact bytes astra wrote for a request (Hash), and a token approves a run
// only when those bytes arrive through the request's own pull request,
// merged by an approver (or are recorded by `astra approve`). The HMAC
// signature is a second layer when ASTRA_APPROVAL_SECRET is set.
package approval

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// pendingDir holds the tokens, relative to the repository root.
const pendingDir = "var/approvals/pending"

// Token is what an approver approves: the schedule, the slot and its
// idempotency key, the payload (by hash), the schedule's definition (by
// hash) and, for the pull request flow, the pull request's number. Its
// first fields are the classic token file's (schedule, who approved and
// when, expiry).
type Token struct {
	ScheduleID     string    `json:"schedule_id"`
	ScheduleName   string    `json:"schedule_name"`
	ApprovedBy     string    `json:"approved_by"` // "" in a pull request: whoever merges it approves
	ApprovedAt     time.Time `json:"approved_at,omitzero"`
	RequestedAt    time.Time `json:"requested_at,omitzero"`
	ExpiresAt      time.Time `json:"expires_at"`
	Slot           time.Time `json:"slot,omitzero"` // zero: the schedule's next due run
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	PayloadHash    string    `json:"payload_hash"`
	Definition     string    `json:"definition,omitempty"` // the schedule's definition hash when requested
	PR             int       `json:"pr,omitempty"`
	Signature      string    `json:"signature,omitempty"`
}

// Path is the token file of a schedule, relative to the repository root.
func Path(scheduleID string) string {
	return filepath.ToSlash(filepath.Join(pendingDir, scheduleID+".token"))
}

// PayloadHash is "sha256:<hex>" of what a run hands its tool: the
// payload's canonical JSON (object keys sorted, as encoding/json writes
// maps) and, for a run triggered by an event, the event's JSON (compacted).
func PayloadHash(payload map[string]any, event json.RawMessage) string {
	if payload == nil {
		payload = map[string]any{}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err) // the loader only accepts JSON-compatible payloads
	}
	if len(event) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, event) == nil {
			event = c.Bytes()
		}
		b = append(append(b, '\n'), event...)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Hash identifies token bytes exactly: "sha256:<hex>". The ledger records
// the hash of what astra wrote; any other bytes approve nothing.
func Hash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (t *Token) mac(secret []byte) string {
	c := *t
	c.Signature = ""
	b, _ := json.Marshal(&c)
	m := hmac.New(sha256.New, secret)
	m.Write(b)
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// Sign sets Signature when secret is non-empty.
func (t *Token) Sign(secret []byte) {
	t.Signature = ""
	if len(secret) > 0 {
		t.Signature = t.mac(secret)
	}
}

// SignedWith reports whether the token carries a valid signature made
// with secret.
func (t *Token) SignedWith(secret []byte) bool {
	return t.Signature != "" && hmac.Equal([]byte(t.Signature), []byte(t.mac(secret)))
}

// Encode is the token file content.
func (t *Token) Encode() []byte {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// Parse reads token bytes strictly: unknown fields are an error.
func Parse(raw []byte) (*Token, error) {
	var t Token
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("not a valid approval token: %v", err)
	}
	return &t, nil
}

// ErrNoToken means the schedule has no token file.
var ErrNoToken = errors.New("no approval token")

// Read returns the bytes of a schedule's token file. It reads only a
// regular file inside the repository, of bounded size.
func Read(repo, scheduleID string) ([]byte, error) {
	raw, err := repofs.ReadFile(repo, Path(scheduleID), model.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoToken
	}
	return raw, err
}

// Pending names, lower-cased, the schedules whose token file may be
// present: one listing instead of a look per schedule (on a file system
// that ignores case, Deploy.token is deploy's). Read says what each is.
func Pending(repo string) (map[string]bool, error) {
	entries, err := repofs.ReadDir(repo, pendingDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".token"); ok {
			ids[strings.ToLower(id)] = true
		}
	}
	return ids, nil
}

// Write stores a token, creating the pending directory, and returns the
// bytes written. Like Read, it never follows a symlink out of the
// repository.
func Write(repo string, t *Token) ([]byte, error) {
	f, err := repofs.OpenFile(repo, Path(t.ScheduleID), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	raw := t.Encode()
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return nil, err
	}
	return raw, f.Close()
}

// Remove deletes a schedule's token file; a missing file is fine.
func Remove(repo, scheduleID string) error {
	err := os.Remove(filepath.Join(repo, filepath.FromSlash(Path(scheduleID))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
