package approval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/seal"
)

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func token() *Token {
	return &Token{ScheduleID: "deploy", ScheduleName: "deploy", ExpiresAt: now.Add(time.Hour),
		IdempotencyKey: "deploy@2026-11-22T09:00:00Z", PayloadHash: PayloadHash(map[string]any{"env": "prod"}, nil), PR: 7}
}

func TestSignature(t *testing.T) {
	secret := []byte("s3cret")
	tok := token()
	if tok.SignedWith(secret) {
		t.Fatal("an unsigned token passes")
	}
	tok.Sign(secret)
	if !tok.SignedWith(secret) || tok.SignedWith([]byte("other")) {
		t.Fatal("signature does not follow the secret")
	}
	edited, err := Parse([]byte(strings.Replace(string(tok.Encode()), `"pr": 7`, `"pr": 8`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if edited.SignedWith(secret) {
		t.Fatal("an edited token keeps its signature")
	}
	tok.Sign(nil)
	if tok.Signature != "" {
		t.Fatal("signing without a secret leaves a signature")
	}
}

func TestRoundTripAndHash(t *testing.T) {
	root := t.TempDir()
	tok := token()
	raw, err := Write(root, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "deploy")
	if err != nil || Hash(got) != Hash(raw) {
		t.Fatalf("read back %q, %v", got, err)
	}
	if Hash(raw) == Hash(append(raw, ' ')) {
		t.Fatal("the hash must cover the exact bytes: a re-encoded token is another token")
	}
	if _, err := Parse([]byte(`{"schedule_id":"deploy","approved_by":"x","extra":1}`)); err == nil {
		t.Fatal("unknown fields are accepted")
	}
	if _, err := Read(root, "missing"); err != ErrNoToken {
		t.Fatalf("missing token: %v", err)
	}
	if err := Remove(root, "deploy"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(root, "deploy"); err != nil {
		t.Fatal("removing twice is not an error")
	}
}

func TestPayloadHash(t *testing.T) {
	if PayloadHash(nil, nil) != PayloadHash(map[string]any{}, nil) || PayloadHash(map[string]any{"a": 1, "b": 2}, nil) != PayloadHash(map[string]any{"b": 2, "a": 1}, nil) {
		t.Fatal("payload hash depends on key order or nil")
	}
	p := map[string]any{"env": "prod"}
	if PayloadHash(p, json.RawMessage(`{"order": 1}`)) != PayloadHash(p, json.RawMessage(`{"order":1}`)) {
		t.Fatal("the event's whitespace changes the hash")
	}
	if PayloadHash(p, json.RawMessage(`{"order":1}`)) == PayloadHash(p, json.RawMessage(`{"order":2}`)) || PayloadHash(p, nil) == PayloadHash(p, json.RawMessage(`{}`)) {
		t.Fatal("the event does not count")
	}
}

// An approver's signature counts only with a key policies list for
// approved_by, over the token as signed: another login, another key or an
// edited token is refused.
func TestVerifyApprover(t *testing.T) {
	priv, pub, err := seal.Generate("octocat")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := seal.ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := seal.Generate("mallory")
	tok := token()
	tok.PR, tok.ApprovedBy = 0, "octocat"
	sig, err := signer.Sign(seal.Approval, tok.SignedBytes())
	if err != nil {
		t.Fatal(err)
	}
	armored, _ := seal.Armor(sig)
	tok.ApproverSignature = string(armored)
	keys := map[string][]string{"OctoCat": {other.String(), pub.String()}}
	if k, err := tok.VerifyApprover(keys); err != nil || k.Fingerprint() != pub.Fingerprint() {
		t.Fatalf("a good signature: %v", err)
	}
	parsed, err := Parse(tok.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parsed.VerifyApprover(keys); err != nil {
		t.Fatalf("the token file's signature: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(*Token)
		keys map[string][]string
	}{
		"unlisted key":  {func(*Token) {}, map[string][]string{"octocat": {other.String()}}},
		"another login": {func(t *Token) { t.ApprovedBy = "mallory" }, map[string][]string{"octocat": {pub.String()}, "mallory": {other.String()}}},
		"edited":        {func(t *Token) { t.ExpiresAt = t.ExpiresAt.Add(time.Hour) }, keys},
		"unsigned":      {func(t *Token) { t.ApproverSignature = "" }, keys},
	} {
		c2 := *parsed
		c.edit(&c2)
		if _, err := c2.VerifyApprover(c.keys); errkind.Of(err) != errkind.ErrRefused {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSignedID: a signed token re-encoded (a trailing newline, other
// indentation) is the same approval; another signature over other bytes
// is not. Data after the token is refused.
func TestSignedID(t *testing.T) {
	tok := token()
	tok.ApprovedBy, tok.ApproverSignature = "octocat", "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"
	raw := tok.Encode()
	for _, copy := range [][]byte{
		append(append([]byte(nil), raw...), '\n'),
		[]byte(strings.ReplaceAll(string(raw), "\n  ", "\n\t")),
	} {
		got, err := Parse(copy)
		if err != nil {
			t.Fatal(err)
		}
		if Hash(copy) == Hash(raw) || got.SignedID() != tok.SignedID() {
			t.Errorf("a re-encoded copy is another approval:\n%s", copy)
		}
	}
	other := *tok
	other.ExpiresAt = other.ExpiresAt.Add(time.Hour)
	if other.SignedID() == tok.SignedID() {
		t.Error("another token has the same id")
	}
	if _, err := Parse(append(append([]byte(nil), raw...), []byte(`{"schedule_id":"other"}`)...)); err == nil {
		t.Error("data after the token is accepted")
	}
}
