// Package heartbeat pings an outside dead-man switch (Healthchecks.io,
// Cronitor and the like) around each cron tick: <url>/start as it starts,
// <url> when it succeeded, <url>/fail when it failed. astra cannot say
// that its own cron stopped firing; the switch notices the pings stop.
//
// The URL is a credential (anyone holding it can report success), so it
// never appears in what this package returns: errors name the ping
// ("start", "success", "fail"), never the address.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one ping: a slow monitor must not hold a tick.
const DefaultTimeout = 10 * time.Second

// Pinger pings one check.
type Pinger struct {
	url     *url.URL
	client  *http.Client
	timeout time.Duration
}

// New is a Pinger for the check at raw (http or https), nil client for
// http.DefaultClient, timeout <= 0 for DefaultTimeout. The error does not
// quote raw.
func New(raw string, client *http.Client, timeout time.Duration) (*Pinger, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the heartbeat URL is not an http(s) URL")
	}
	if client == nil {
		client = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Pinger{url: u, client: client, timeout: timeout}, nil
}

// Start reports that a tick started.
func (p *Pinger) Start(ctx context.Context) error { return p.ping(ctx, "start") }

// Finish reports how the tick ended: failed is a non-zero exit.
func (p *Pinger) Finish(ctx context.Context, failed bool) error {
	if failed {
		return p.ping(ctx, "fail")
	}
	return p.ping(ctx, "")
}

// ping sends GET <url>[/suffix]. It runs even when ctx was cancelled (a
// tick stopped by a signal is reported as failed), within the timeout.
func (p *Pinger) ping(ctx context.Context, suffix string) error {
	name := suffix
	if name == "" {
		name = "success"
	}
	u := *p.url
	if suffix != "" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + suffix
		u.RawPath = ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("heartbeat %s ping: %s", name, "cannot build the request")
	}
	req.Header.Set("User-Agent", "astra")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("heartbeat %s ping: %s", name, cause(err, p.timeout))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("heartbeat %s ping: the monitor answered %s", name, resp.Status)
	}
	return nil
}

// cause is what went wrong without the URL a *url.Error quotes.
func cause(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
