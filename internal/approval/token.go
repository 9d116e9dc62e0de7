// Package approval reads, writes, signs and verifies approval tokens:
// var/approvals/pending/<schedule_id>.token (seed 000), one file per
// schedule, valid for one run of one payload until it expires.
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
	"time"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// PendingDir holds the tokens, relative to the repository root.
const PendingDir = "var/approvals/pending"

// Token is the seed 000 approval token plus what makes it safe to use once:
// the slot it approves, the payload hash and, for the pull request flow, the
// PR number. With ASTRA_APPROVAL_SECRET set, Signature is an HMAC-SHA256 of
// the token without it, so an edited token is refused.
type Token struct {
	ScheduleID     string    `json:"schedule_id"`
	ScheduleName   string    `json:"schedule_name"`
	ApprovedBy     string    `json:"approved_by"`
	ApprovedAt     time.Time `json:"approved_at,omitzero"`
	RequestedAt    time.Time `json:"requested_at,omitzero"`
	ExpiresAt      time.Time `json:"expires_at"`
	Slot           time.Time `json:"slot,omitzero"` // zero: the next due run
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	PayloadHash    string    `json:"payload_hash"`
	PR             int       `json:"pr,omitempty"`
	Signature      string    `json:"signature,omitempty"`
}

// Path is the token file of a schedule, relative to the repository root.
func Path(scheduleID string) string {
	return filepath.ToSlash(filepath.Join(PendingDir, scheduleID+".token"))
}

// PayloadHash is "sha256:<hex>" of the payload's canonical JSON (object
// keys sorted, as encoding/json writes maps).
func PayloadHash(payload map[string]any) string {
	if payload == nil {
		payload = map[string]any{}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err) // the loader only accepts JSON-compatible payloads
	}
	sum := sha256.Sum256(b)
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

// Encode is the token file content.
func (t *Token) Encode() []byte {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// ID identifies one token for one-time use: the hash of its content.
func ID(raw []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(raw))
	return hex.EncodeToString(sum[:16])
}

// ErrNoToken means the schedule has no token file.
var ErrNoToken = errors.New("no approval token")

// Read loads a schedule's token; raw is the file content (for ID).
func Read(repo, scheduleID string) (*Token, []byte, error) {
	rel := Path(scheduleID)
	raw, err := repofs.ReadFile(repo, rel, model.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNoToken
	}
	if err != nil {
		return nil, nil, err
	}
	var t Token
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, raw, fmt.Errorf("%s: not a valid approval token: %v", rel, err)
	}
	return &t, raw, nil
}

// Write stores a token, creating the pending directory. Like Read, it
// never follows a symlink out of the repository.
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

// Check is what a token must match to approve a run.
type Check struct {
	ScheduleID  string
	Key         string // the slot about to run
	PayloadHash string
	Now         time.Time
	Secret      []byte // ASTRA_APPROVAL_SECRET; when set, tokens must be signed
	// ViaPR: the approver is whoever merged the token's pull request, so
	// the token itself names nobody yet.
	ViaPR bool
}

// Problem says why a token does not approve a run.
type Problem struct {
	Expired bool // the token is valid but too old
	Msg     string
}

func (p *Problem) Error() string { return p.Msg }

// Verify checks a token against a run; nil means it approves it.
func (t *Token) Verify(c Check) *Problem {
	switch {
	case t.ScheduleID != c.ScheduleID:
		return &Problem{Msg: fmt.Sprintf("token is for schedule %q, not %q", t.ScheduleID, c.ScheduleID)}
	case len(c.Secret) > 0 && t.Signature == "":
		return &Problem{Msg: "token is not signed but ASTRA_APPROVAL_SECRET is set"}
	case len(c.Secret) > 0 && !hmac.Equal([]byte(t.Signature), []byte(t.mac(c.Secret))):
		return &Problem{Msg: "token signature does not match: it was edited or signed with another secret"}
	case c.ViaPR && t.PR == 0:
		return &Problem{Msg: "token names no pull request: approvals must be merged through their pull request"}
	case !c.ViaPR && (t.ApprovedBy == "" || t.ApprovedAt.IsZero()):
		return &Problem{Msg: "token has no approved_by / approved_at"}
	case t.ExpiresAt.IsZero():
		return &Problem{Msg: "token has no expires_at"}
	case !c.Now.Before(t.ExpiresAt):
		return &Problem{Expired: true, Msg: fmt.Sprintf("token expired at %s", t.ExpiresAt.UTC().Format(time.RFC3339))}
	case t.PayloadHash != c.PayloadHash:
		return &Problem{Msg: "token approves another payload (payload_hash differs): the schedule's payload changed after approval"}
	case t.IdempotencyKey != "" && c.Key != "" && t.IdempotencyKey != c.Key:
		return &Problem{Msg: fmt.Sprintf("token approves slot %s, not %s", t.IdempotencyKey, c.Key)}
	}
	return nil
}
