package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a trigger signature's timestamp may be from
// now, either way.
const DefaultTolerance = 5 * time.Minute

// SignTrigger signs an event for `astra trigger`, in the header format
// "t=<unix seconds>,v1=<hex>": v1 is the HMAC-SHA256, keyed with secret, of
// the timestamp, a newline, the event name, a newline and the payload bytes.
// Newlines (which event names cannot hold) keep the three apart: with dots,
// event "a.1" and payload 2 would sign the same bytes as event "a" and
// payload 1.2.
func SignTrigger(secret []byte, event string, payload []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(triggerMAC(secret, ts, event, payload))
}

func triggerMAC(secret []byte, ts, event string, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "\n" + event + "\n"))
	m.Write(payload)
	return m.Sum(nil)
}

// TriggerSignature is a verified trigger signature.
type TriggerSignature struct {
	// ID names the signed request without revealing it (a hash of the
	// MAC). Record it; the same ID again before Expires is a replay.
	ID      string
	Signed  time.Time // the t= timestamp
	Expires time.Time // after this the signature is refused anyway
}

// VerifyTrigger checks a "t=...,v1=..." header against event and payload:
// the timestamp must be within tolerance of now (DefaultTolerance when
// tolerance is 0), and one of the v1 values (a sender rotating its secret
// sends one per secret) must be the MAC, compared in constant time. Other
// keys in the header are ignored.
func VerifyTrigger(secret []byte, header, event string, payload []byte, now time.Time, tolerance time.Duration) (TriggerSignature, error) {
	if len(secret) == 0 {
		return TriggerSignature{}, errors.New("no secret to check the signature with")
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts string
	var macs [][]byte
	for _, part := range strings.Split(strings.TrimSpace(header), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			if ts != "" {
				return TriggerSignature{}, errors.New("signature has two t= timestamps")
			}
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
				macs = append(macs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(macs) == 0 {
		return TriggerSignature{}, errors.New(`signature must look like "t=<unix seconds>,v1=<64 hex digits>"`)
	}
	signed := time.Unix(unix, 0)
	switch age := now.Sub(signed); {
	case age > tolerance:
		return TriggerSignature{}, fmt.Errorf("signature was made %s ago, outside the %s window: sign each delivery when sending it", age.Round(time.Second), tolerance)
	case age < -tolerance:
		return TriggerSignature{}, fmt.Errorf("signature is dated %s ahead, outside the %s window: check the sender's clock", (-age).Round(time.Second), tolerance)
	}
	want := triggerMAC(secret, ts, event, payload)
	ok := false
	for _, m := range macs {
		ok = hmac.Equal(m, want) || ok
	}
	if !ok {
		return TriggerSignature{}, fmt.Errorf("signature does not match event %s with this payload", event)
	}
	id := sha256.Sum256(want)
	return TriggerSignature{ID: hex.EncodeToString(id[:8]), Signed: signed, Expires: signed.Add(tolerance)}, nil
}

// VerifyGitHubSignature checks GitHub's X-Hub-Signature-256 header
// ("sha256=<hex>", the HMAC-SHA256 of the payload) for a webhook delivery
// relayed to astra trigger. By GitHub's design it covers neither a time nor
// the event name: a relayed delivery can be replayed, and only its
// idempotency key (a hash of event and payload) keeps it from running twice.
func VerifyGitHubSignature(secret []byte, header string, payload []byte) error {
	if len(secret) == 0 {
		return errors.New("no secret to check the signature with")
	}
	got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(header), "sha256="))
	if !strings.HasPrefix(strings.TrimSpace(header), "sha256=") || err != nil || len(got) != sha256.Size {
		return errors.New(`signature must look like "sha256=<64 hex digits>"`)
	}
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	if !hmac.Equal(got, m.Sum(nil)) {
		return errors.New("signature does not match the payload")
	}
	return nil
}
