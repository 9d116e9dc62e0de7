// Package approval reads, writes and signs approval tokens:
// var/approvals/pending/<schedule_id>.token, one file per schedule.
//
// A token is evidence, not authority. A token approves a run only in two
// ways, both checked by the run that uses it:
//
//   - a pull request: the ledger records the hash of the exact bytes astra
//     wrote for a request (Hash), and those bytes must arrive through the
//     request's own pull request, merged by an approver;
//   - a signature: `astra approve` signs the token with the approver's SSH
//     key (ssh-keygen -Y sign, namespace seal.Approval), and the key must
//     be one policies list for approved_by under signing_keys.
//
// Either way the token binds an action (action.go): what was approved is
// what runs. The HMAC signature (ASTRA_APPROVAL_SECRET) is a second layer
// on the tokens astra writes for pull requests.
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

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
	"github.com/astra-gitops/astra/internal/seal"
)

// Dir holds the tokens, relative to the repository root.
const Dir = "var/approvals/pending"

// Token is what an approver approves: one run (the schedule, the slot and
// its idempotency key), the action it runs, and, for the pull request
// flow, the pull request's number. Its first fields are the classic token
// file's (schedule, who approved and when, expiry).
type Token struct {
	ScheduleID     string    `json:"schedule_id"`
	ScheduleName   string    `json:"schedule_name"`
	ApprovedBy     string    `json:"approved_by"` // "" in a pull request: whoever merges it approves
	ApprovedAt     time.Time `json:"approved_at,omitzero"`
	RequestedAt    time.Time `json:"requested_at,omitzero"`
	ExpiresAt      time.Time `json:"expires_at"`
	Slot           time.Time `json:"slot"`
	IdempotencyKey string    `json:"idempotency_key"`
	PayloadHash    string    `json:"payload_hash"`
	Action         *Action   `json:"action"`
	PR             int       `json:"pr,omitempty"`
	// Comment is the approver's reason (astra approve --reason), signed
	// with the rest and recorded with the approval.
	Comment   string `json:"comment,omitempty"`
	Signature string `json:"signature,omitempty"` // HMAC with ASTRA_APPROVAL_SECRET (pull requests)
	// ApproverSignature is approved_by's SSHSIG (armored, namespace
	// seal.Approval) over SignedBytes.
	ApproverSignature string `json:"approver_signature,omitempty"`
}

// Path is the token file of a schedule, relative to the repository root.
func Path(scheduleID string) string {
	return filepath.ToSlash(filepath.Join(Dir, scheduleID+".token"))
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

// SignedBytes are what an approver signs: the token file's content
// without its approver_signature.
func (t *Token) SignedBytes() []byte {
	c := *t
	c.ApproverSignature = ""
	return c.Encode()
}

// ErrUnsigned means a token carries no approver signature.
var ErrUnsigned = errors.New("the token is not signed by an approver")

// VerifyApprover checks the approver signature against the keys that
// signingKeys (policies' signing_keys) list for approved_by, and returns
// the key that made it. Anything else is a refusal: no signature, no
// approved_by, a login with no keys, a signature by another key or over
// other bytes.
func (t *Token) VerifyApprover(signingKeys map[string][]string) (seal.PublicKey, error) {
	if t.ApproverSignature == "" {
		return seal.PublicKey{}, errkind.Refused(ErrUnsigned)
	}
	if t.ApprovedBy == "" {
		return seal.PublicKey{}, errkind.Refusedf("the token is signed but names no approved_by")
	}
	var keys []seal.PublicKey
	for login, lines := range signingKeys {
		if !strings.EqualFold(login, t.ApprovedBy) {
			continue
		}
		for _, l := range lines {
			if k, err := seal.ParsePublicKey(l); err == nil {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return seal.PublicKey{}, errkind.Refusedf("policies list no signing key for %s (signing_keys)", t.ApprovedBy)
	}
	k, err := seal.Verify(keys, seal.Approval, t.SignedBytes(), []byte(t.ApproverSignature))
	if err != nil {
		return seal.PublicKey{}, fmt.Errorf("the approver signature is not one of %s's listed keys: %w", t.ApprovedBy, err)
	}
	return k, nil
}

// KeyOwner is the login whose keys signingKeys (policies' signing_keys)
// list one with fingerprint; "" when none does, or when more than one
// login lists it (a key is one person's).
func KeyOwner(signingKeys map[string][]string, fingerprint string) string {
	owner := ""
	for login, lines := range signingKeys {
		for _, l := range lines {
			if k, err := seal.ParsePublicKey(l); err == nil && k.Fingerprint() == fingerprint {
				if owner != "" && !strings.EqualFold(owner, login) {
					return ""
				}
				owner = login
			}
		}
	}
	return owner
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
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return nil, errors.New("not a valid approval token: data after the token")
	}
	return &t, nil
}

// SignedID names a token an approver signed by what the signature covers,
// not by its bytes: a copy re-encoded (whitespace, key order, a trailing
// newline, the signature's armor wrapped again) is the same approval, so
// a used one stays used.
func (t *Token) SignedID() string { return Hash(t.SignedBytes()) }

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
	entries, err := repofs.ReadDir(repo, Dir)
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
