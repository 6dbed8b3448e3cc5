package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxStatusBytes caps one status answer.
const maxStatusBytes = 1 << 20

// statusReply is what a status URL answers: {"status": "running"|"done"|
// "failed", "output": "...", "error": "...", "progress": "..."}.
type statusReply struct {
	Status   string `json:"status"`
	Output   string `json:"output"`
	Error    string `json:"error"`
	Progress string `json:"progress"`
}

// poll reads an HTTP task's status URL until it says done or failed, waiting
// pollMin, then twice as long each time up to pollMax. Failed reads count as
// "still running": the endpoint may be restarting.
func (m *Manager) poll(ctx context.Context, t *Task) (string, error) {
	headers := m.headers(ctx, t)
	wait := m.pollMin
	progress := ""
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-timer.C:
		}
		r, err := m.readStatus(ctx, t.StatusURL, headers)
		switch {
		case err != nil:
			m.logger.Debug("poll task status", "task_id", t.ID, "error", err)
		case r.Status == StatusDone:
			return r.Output, nil
		case r.Status == StatusFailed:
			if r.Error == "" {
				r.Error = "the tool reported a failure"
			}
			return r.Output, errors.New(r.Error)
		case r.Progress != "" && r.Progress != progress:
			progress = r.Progress
			u := t.clone()
			u.Result = progress
			m.event(u, updateEvent)
		}
		wait = min(2*wait, m.pollMax)
		timer.Reset(wait)
	}
}

// headers are the tool's headers when the status URL is on the tool's own
// origin: they usually authenticate, and must not go to another host.
func (m *Manager) headers(ctx context.Context, t *Task) map[string]string {
	if m.defs == nil {
		return nil
	}
	def, err := m.defs.GetTool(ctx, t.User, t.Tool)
	if err != nil {
		return nil
	}
	a, aerr := url.Parse(def.URL)
	b, berr := url.Parse(t.StatusURL)
	if aerr != nil || berr != nil || a.Scheme != b.Scheme || a.Host != b.Host {
		return nil
	}
	return def.Headers
}

func (m *Manager) readStatus(ctx context.Context, statusURL string, headers map[string]string) (*statusReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status URL answered HTTP %d", resp.StatusCode)
	}
	var r statusReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("status URL answered something else than JSON: %w", err)
	}
	return &r, nil
}

// ValidStatusURL checks a status URL an async tool answered.
func ValidStatusURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("status_url %q must be an http or https URL without credentials", raw)
	}
	return nil
}
