package forge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// transport sits under go-github and owns every retry and rate-limit wait,
// so go-github only ever sees final answers. It also removes the rate-limit
// headers from what it hands up: go-github would otherwise remember an
// exhausted limit and refuse later calls locally, without waiting; here the
// transport remembers it instead (exhaustedUntil) and waits when allowed.
type transport struct {
	inner      *http.Client
	token      string
	redact     func(string) string
	maxRetries int
	maxWait    time.Duration
	sleep      func(context.Context, time.Duration) error
	now        func() time.Time
	basePath   string

	mu             sync.Mutex
	exhaustedUntil time.Time // local clock; zero when the primary limit is not known to be spent
	exhaustedReset time.Time // GitHub's reset time, for messages
}

const (
	backoffBase      = time.Second
	backoffCap       = 30 * time.Second
	secondaryDefault = time.Minute // GitHub: "wait for at least one minute"
	attemptsHeader   = "X-Astra-Attempts"
)

type ctxKey int

const retryPOSTKey ctxKey = 1

// retryablePOST marks a POST that is safe to repeat after a 5xx or a
// network error (GitHub either refuses the duplicate or it is a set union).
// Other POSTs are retried only after rate limits, which GitHub answers
// before doing anything.
func retryablePOST(ctx context.Context) context.Context {
	return context.WithValue(ctx, retryPOSTKey, true)
}

func (t *transport) idempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	v, _ := req.Context().Value(retryPOSTKey).(bool)
	return v
}

func (t *transport) op(req *http.Request) string {
	return req.Method + " " + apiPath(req.URL, t.basePath)
}

// apiPath is the request path relative to the API root, without the query.
func apiPath(u *url.URL, basePath string) string {
	p := strings.TrimPrefix(u.Path, basePath)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// backoff is exponential with "equal jitter": a random duration in
// [d/2, d] where d = 1s, 2s, 4s, ... capped at 30s.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt-1, 10)
	d = min(d, backoffCap)
	return d/2 + rand.N(d/2+1)
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	op := t.op(req)
	secondaryWaits := 0
	for attempt := 1; ; attempt++ {
		if err := t.waitForReset(ctx, op, attempt); err != nil {
			return nil, err
		}
		out := req.Clone(ctx)
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			out.Body = body
		}
		out.Header.Set("Authorization", "Bearer "+t.token)
		canRetry := attempt <= t.maxRetries && replayable(req)

		resp, err := t.inner.Do(out)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			if !canRetry || !t.idempotent(req) {
				return nil, &TransportError{Op: op, Attempts: attempt, msg: t.redact(err.Error()), err: err}
			}
			if err := t.sleep(ctx, backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}

		if lim := t.rateLimited(resp); lim != nil {
			drain(resp)
			if lim.unspecified {
				lim.wait = secondaryDefault << min(secondaryWaits, 10)
				secondaryWaits++
			}
			e := &RateLimitError{Op: op, Secondary: lim.secondary, Wait: lim.wait, Reset: lim.reset, MaxWait: t.maxWait, Attempts: attempt}
			if lim.wait > t.maxWait || !canRetry {
				return nil, e
			}
			if err := t.sleep(ctx, lim.wait); err != nil {
				return nil, err
			}
			continue
		}
		if retryStatus(resp.StatusCode) && canRetry && t.idempotent(req) {
			drain(resp)
			if err := t.sleep(ctx, backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		t.noteExhausted(resp)
		for _, h := range []string{"X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Ratelimit-Limit", "X-Ratelimit-Used", "Retry-After"} {
			resp.Header.Del(h)
		}
		resp.Header.Set(attemptsHeader, strconv.Itoa(attempt))
		return resp, nil
	}
}

func retryStatus(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

type limit struct {
	secondary   bool
	unspecified bool // secondary limit without Retry-After: wait a minute, then longer
	wait        time.Duration
	reset       time.Time
}

// serverNow is GitHub's clock (the Date header), so that a skewed local
// clock does not shorten or stretch waits computed from X-RateLimit-Reset.
func (t *transport) serverNow(resp *http.Response) time.Time {
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		return d
	}
	return t.now()
}

// rateLimited recognises GitHub's rate-limit answers (docs: "Rate limits for
// the REST API", "Best practices"): 403 or 429 with Retry-After (wait that
// long), with X-RateLimit-Remaining: 0 (wait until X-RateLimit-Reset), or a
// secondary-limit message without either (wait at least a minute).
func (t *transport) rateLimited(resp *http.Response) *limit {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	h := resp.Header
	if ra := strings.TrimSpace(h.Get("Retry-After")); ra != "" {
		l := &limit{secondary: true}
		if secs, err := strconv.Atoi(ra); err == nil {
			l.wait = time.Duration(max(secs, 0)) * time.Second
		} else if at, err := http.ParseTime(ra); err == nil {
			l.wait = at.Sub(t.serverNow(resp))
		} else {
			l.unspecified = true
		}
		l.wait = max(l.wait, time.Second)
		return l
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		l := &limit{}
		reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			l.unspecified = true
			return l
		}
		l.reset = time.Unix(reset, 0).UTC()
		l.wait = max(l.reset.Sub(t.serverNow(resp)), time.Second)
		return l
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return &limit{secondary: true, unspecified: true}
	}
	// A 403 is a secondary limit only if GitHub says so in the body; read
	// it and put it back for go-github.
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	low := strings.ToLower(string(data))
	if strings.Contains(low, "secondary rate limit") || strings.Contains(low, "secondary-rate-limits") || strings.Contains(low, "abuse") {
		return &limit{secondary: true, unspecified: true}
	}
	return nil
}

// noteExhausted remembers a spent primary limit seen on a successful answer
// so that the next request waits for the reset instead of being refused.
func (t *transport) noteExhausted(resp *http.Response) {
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		return
	}
	reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return
	}
	at := time.Unix(reset, 0).UTC()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.exhaustedReset = at
	t.exhaustedUntil = t.now().Add(at.Sub(t.serverNow(resp)))
}

func (t *transport) waitForReset(ctx context.Context, op string, attempt int) error {
	t.mu.Lock()
	until, reset := t.exhaustedUntil, t.exhaustedReset
	t.mu.Unlock()
	if until.IsZero() {
		return nil
	}
	wait := until.Sub(t.now())
	if wait > t.maxWait {
		// Still spent for later calls too; fail without a request.
		return &RateLimitError{Op: op, Wait: wait, Reset: reset, MaxWait: t.maxWait, Attempts: attempt - 1}
	}
	if wait > 0 {
		if err := t.sleep(ctx, wait); err != nil {
			return err
		}
	}
	t.mu.Lock()
	if t.exhaustedUntil.Equal(until) {
		t.exhaustedUntil, t.exhaustedReset = time.Time{}, time.Time{}
	}
	t.mu.Unlock()
	return nil
}
