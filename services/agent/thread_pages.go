package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// MaxThreadQueryRunes bounds ListThreadsRequest.query, like a title.
const MaxThreadQueryRunes = MaxThreadTitleRunes

// pageTokenVersion starts every page token, so that a later format can
// tell its own tokens from these.
const pageTokenVersion = "1"

// threadListQuery turns a ListThreadsRequest into the store's query, or
// answers InvalidArgument naming the field at fault. A page token carries
// where the previous page ended and a digest of that position, the user
// and the filters it was read with: a token altered, or used with other
// filters or by another user, is refused, never read as another listing.
// The digest is no secret: a user who forges one can only list their own
// threads from another position, as the store is asked for theirs alone.
func threadListQuery(user string, req *agentv1.ListThreadsRequest) (threads.ListQuery, error) {
	q := threads.ListQuery{AgentID: req.GetAgentId(), SkipPrefix: subagent.ThreadPrefix}
	if q.AgentID != "" {
		if err := checkID("agent_id", q.AgentID); err != nil {
			return q, err
		}
	}
	if n := req.GetPageSize(); n < 0 || n > threads.MaxPageSize {
		return q, invalid("page_size", fmt.Sprintf("%d; give 1 to %d, or 0 for %d", n, threads.MaxPageSize, threads.DefaultPageSize))
	}
	q.Limit = int(req.GetPageSize())
	query := req.GetQuery()
	switch {
	case !utf8.ValidString(query):
		return q, invalid("query", "not valid UTF-8")
	case utf8.RuneCountInString(query) > MaxThreadQueryRunes:
		return q, invalid("query", fmt.Sprintf("%d characters, over the limit of %d", utf8.RuneCountInString(query), MaxThreadQueryRunes))
	}
	q.Words = strings.Fields(strings.ToLower(query))
	if tok := req.GetPageToken(); tok != "" {
		c, err := decodePageToken(user, q, tok)
		if err != nil {
			return q, invalid("page_token", err.Error())
		}
		q.After = c
	}
	return q, nil
}

// pageDigest ties a position to its listing: user, agent and query words.
func pageDigest(user string, q threads.ListQuery, ns int64, threadID string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{user, q.AgentID, strings.Join(q.Words, " "), strconv.FormatInt(ns, 10), threadID}, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// encodePageToken is the token of the page after c in the listing of user
// and q: "1.<unix ns>.<digest>.<thread id>", base64url; "" without c.
func encodePageToken(user string, q threads.ListQuery, c *threads.Cursor) string {
	if c == nil {
		return ""
	}
	ns := c.At.UnixNano()
	raw := pageTokenVersion + "." + strconv.FormatInt(ns, 10) + "." + pageDigest(user, q, ns, c.ThreadID) + "." + c.ThreadID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodePageToken reads a token encodePageToken wrote for user and q.
func decodePageToken(user string, q threads.ListQuery, tok string) (*threads.Cursor, error) {
	bad := errors.New("not a page token of ListThreads: pass next_page_token as it came")
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, bad
	}
	parts := strings.SplitN(string(raw), ".", 4)
	if len(parts) != 4 || parts[0] != pageTokenVersion {
		return nil, bad
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ns < 0 || ids.Check("thread_id", parts[3]) != nil {
		return nil, bad
	}
	if parts[2] != pageDigest(user, q, ns, parts[3]) {
		return nil, errors.New("altered, or given for another listing: keep agent_id and query as they were, or start again without a token")
	}
	return &threads.Cursor{At: time.Unix(0, ns).UTC(), ThreadID: parts[3]}, nil
}
