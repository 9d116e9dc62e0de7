package approval

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func token() *Token {
	return &Token{ScheduleID: "deploy", ScheduleName: "deploy", ApprovedBy: "octocat", ApprovedAt: now, ExpiresAt: now.Add(time.Hour),
		IdempotencyKey: "deploy@2026-11-22T09:00:00Z", PayloadHash: PayloadHash(map[string]any{"env": "prod"})}
}

func TestVerify(t *testing.T) {
	secret := []byte("s3cret")
	good := Check{ScheduleID: "deploy", Key: "deploy@2026-11-22T09:00:00Z", PayloadHash: PayloadHash(map[string]any{"env": "prod"}), Now: now.Add(time.Minute)}
	cases := []struct {
		name    string
		tok     func() *Token
		check   func(Check) Check
		want    string
		expired bool
	}{
		{"valid", token, nil, "", false},
		{"other schedule", token, func(c Check) Check { c.ScheduleID = "other"; return c }, "for schedule", false},
		{"expired", token, func(c Check) Check { c.Now = now.Add(2 * time.Hour); return c }, "expired", true},
		{"payload changed", token, func(c Check) Check { c.PayloadHash = PayloadHash(map[string]any{"env": "staging"}); return c }, "payload_hash differs", false},
		{"other slot", token, func(c Check) Check { c.Key = "deploy@2026-11-23T09:00:00Z"; return c }, "approves slot", false},
		{"keyless token approves any slot", func() *Token { t := token(); t.IdempotencyKey = ""; return t }, func(c Check) Check { c.Key = "deploy@2026-11-23T09:00:00Z"; return c }, "", false},
		{"nobody approved", func() *Token { t := token(); t.ApprovedBy = ""; return t }, nil, "approved_by", false},
		{"no expiry", func() *Token { t := token(); t.ExpiresAt = time.Time{}; return t }, nil, "no expires_at", false},
		{"unsigned with a secret", token, func(c Check) Check { c.Secret = secret; return c }, "not signed", false},
		{"signed", func() *Token { t := token(); t.Sign(secret); return t }, func(c Check) Check { c.Secret = secret; return c }, "", false},
		{"signed then edited", func() *Token { t := token(); t.Sign(secret); t.ExpiresAt = now.Add(99 * time.Hour); return t }, func(c Check) Check { c.Secret = secret; return c }, "signature does not match", false},
		{"signed with another secret", func() *Token { t := token(); t.Sign([]byte("other")); return t }, func(c Check) Check { c.Secret = secret; return c }, "signature does not match", false},
		{"via PR without a PR", func() *Token { t := token(); t.ApprovedBy = ""; return t }, func(c Check) Check { c.ViaPR = true; return c }, "names no pull request", false},
		{"via PR: the merger is the approver", func() *Token { t := token(); t.ApprovedBy, t.ApprovedAt, t.PR = "", time.Time{}, 7; return t }, func(c Check) Check { c.ViaPR = true; return c }, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := good
			if c.check != nil {
				chk = c.check(chk)
			}
			p := c.tok().Verify(chk)
			switch {
			case c.want == "" && p != nil:
				t.Fatalf("refused: %v", p)
			case c.want != "" && (p == nil || !strings.Contains(p.Msg, c.want)):
				t.Fatalf("got %v, want a problem containing %q", p, c.want)
			case p != nil && p.Expired != c.expired:
				t.Fatalf("expired = %v", p.Expired)
			}
		})
	}
}

func TestRoundTripAndID(t *testing.T) {
	root := t.TempDir()
	tok := token()
	tok.Sign([]byte("k"))
	raw, err := Write(root, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, raw2, err := Read(root, "deploy")
	if err != nil || got.Verify(Check{ScheduleID: "deploy", Key: tok.IdempotencyKey, PayloadHash: tok.PayloadHash, Now: now, Secret: []byte("k")}) != nil {
		t.Fatalf("%v", err)
	}
	edited := []byte(strings.Replace(string(raw), "octocat", "octocaT", 1))
	if ID(raw) != ID(raw2) || ID(raw) != ID(append(raw, '\n', ' ')) || ID(raw) == ID(edited) {
		t.Fatal("token ids must follow the content, not trailing whitespace")
	}
	if _, _, err := Read(root, "missing"); err != ErrNoToken {
		t.Fatalf("missing token: %v", err)
	}
	if err := Remove(root, "deploy"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(root, "deploy"); err != nil {
		t.Fatal("removing twice is not an error")
	}
	if PayloadHash(nil) != PayloadHash(map[string]any{}) || PayloadHash(map[string]any{"a": 1, "b": 2}) != PayloadHash(map[string]any{"b": 2, "a": 1}) {
		t.Fatal("payload hash depends on key order or nil")
	}
}
