package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestTriggerSignature(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	payload := []byte(`{"order":42}`)
	header := SignTrigger(secret, "order.paid", payload, now)

	// The MAC is of "<t>\n<event>\n<payload>", so any sender can compute it.
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("1795424400\norder.paid\n" + string(payload)))
	if want := "t=1795424400,v1=" + hex.EncodeToString(m.Sum(nil)); header != want {
		t.Fatalf("header = %s, want %s", header, want)
	}

	sig, err := VerifyTrigger(secret, header, "order.paid", payload, now.Add(4*time.Minute), 0)
	if err != nil || len(sig.ID) != 16 || !sig.Signed.Equal(now) || !sig.Expires.Equal(now.Add(DefaultTolerance)) {
		t.Fatalf("VerifyTrigger = %+v, %v", sig, err)
	}
	again, _ := VerifyTrigger(secret, " "+header+" ", "order.paid", payload, now, 0)
	if again.ID != sig.ID {
		t.Errorf("a replay has another id: %s, %s", again.ID, sig.ID)
	}
	other, _ := VerifyTrigger(secret, SignTrigger(secret, "order.paid", payload, now.Add(time.Second)), "order.paid", payload, now, 0)
	if other.ID == sig.ID {
		t.Error("two signings share an id")
	}

	// Rotation: the sender signs with the old and the new secret.
	rotated := header + ",v1=" + strings.Repeat("ab", 32) + ",v0=ignored"
	if _, err := VerifyTrigger(secret, strings.Replace(rotated, "v1=", "v1="+strings.Repeat("cd", 32)+",v1=", 1), "order.paid", payload, now, 0); err != nil {
		t.Errorf("several v1 values: %v", err)
	}

	for _, c := range []struct {
		name, header, event, payload string
		now                          time.Time
		tolerance                    time.Duration
		err                          string
	}{
		{"other event", header, "order.refund", string(payload), now, 0, "does not match event order.refund"},
		{"other payload", header, "order.paid", `{"order":43}`, now, 0, "does not match"},
		{"ambiguous split", SignTrigger(secret, "x.1", []byte("2"), now), "x", "1.2", now, 0, "does not match"},
		{"too old", header, "order.paid", string(payload), now.Add(5*time.Minute + time.Second), 0, "made 5m1s ago, outside the 5m0s window"},
		{"too new", header, "order.paid", string(payload), now.Add(-6 * time.Minute), 0, "dated 6m0s ahead"},
		{"narrow window", header, "order.paid", string(payload), now.Add(31 * time.Second), 30 * time.Second, "outside the 30s window"},
		{"other secret", SignTrigger([]byte("other"), "order.paid", payload, now), "order.paid", string(payload), now, 0, "does not match"},
		{"no timestamp", "v1=" + strings.Repeat("ab", 32), "order.paid", string(payload), now, 0, "must look like"},
		{"no v1", "t=1795424400", "order.paid", string(payload), now, 0, "must look like"},
		{"two timestamps", "t=1,t=2,v1=00", "order.paid", string(payload), now, 0, "two t="},
		{"github format", "sha256=" + strings.Repeat("ab", 32), "order.paid", string(payload), now, 0, "must look like"},
	} {
		if _, err := VerifyTrigger(secret, c.header, c.event, []byte(c.payload), c.now, c.tolerance); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
	}
	if _, err := VerifyTrigger(nil, header, "order.paid", payload, now, 0); err == nil {
		t.Error("verified without a secret")
	}
}

func TestGitHubSignature(t *testing.T) {
	secret := []byte("It's a Secret to Everybody")
	payload := []byte("Hello, World!")
	// GitHub's documented example (docs.github.com, validating webhook deliveries).
	good := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if err := VerifyGitHubSignature(secret, good, payload); err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		"sha256=" + strings.Repeat("0", 64): "does not match the payload",
		strings.TrimPrefix(good, "sha256="): "must look like",
		"sha1=757107ea":                     "must look like",
		"t=1,v1=00":                         "must look like",
	} {
		if err := VerifyGitHubSignature(secret, header, payload); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", header, err, want)
		}
	}
	if err := VerifyGitHubSignature(secret, good, []byte("Hello, World?")); err == nil {
		t.Error("a changed payload verified")
	}
}
