package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	"github.com/switchyard/switchyard/usage"
)

// defaultUsageRange is a query's range when it names no start.
const defaultUsageRange = 24 * time.Hour

// usageStore is the ledger's store, or the error usage RPCs answer without one.
func (s *adminService) usageStore() (usage.Store, error) {
	st := s.ledger.Store()
	if _, none := st.(usage.None); none {
		return nil, statusOf(apiError{httpStatus: http.StatusPreconditionFailed, grpcCode: codes.FailedPrecondition,
			errType: "invalid_request_error", code: "usage_disabled", message: "the usage ledger is off on this server (usage.store: none)"})
	}
	return st, nil
}

// usageRange reads [start, end): RFC 3339 times, or `since` before end (default 24h).
func usageRange(start, end, since string, now time.Time) (time.Time, time.Time, error) {
	to := now
	if end != "" {
		t, err := time.Parse(time.RFC3339Nano, end)
		if err != nil {
			return time.Time{}, time.Time{}, invalidRequest("end_time", "end_time must be an RFC 3339 time such as 2026-12-01T00:00:00Z")
		}
		to = t
	}
	if start != "" {
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return time.Time{}, time.Time{}, invalidRequest("start_time", "start_time must be an RFC 3339 time such as 2026-12-01T00:00:00Z")
		}
		if !t.Before(to) {
			return time.Time{}, time.Time{}, invalidRequest("start_time", "start_time must be before end_time (or now, without one)")
		}
		return t, to, nil
	}
	d := defaultUsageRange
	if since != "" {
		var ok bool
		if d, ok = parseSince(since); !ok {
			return time.Time{}, time.Time{}, invalidRequest("since", "since must be a positive duration such as 24h, 90m, 7d or 1d12h")
		}
	}
	return to.Add(-d), to, nil
}

// parseSince reads a positive Go duration, which may begin with whole days
// ("7d", "1d12h"): the unit a usage range is most often asked in.
func parseSince(s string) (time.Duration, bool) {
	var days time.Duration
	if n, rest, found := strings.Cut(s, "d"); found {
		v, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return 0, false
		}
		days, s = time.Duration(v)*24*time.Hour, rest
		if s == "" {
			return days, days > 0
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || days+d <= 0 || d < 0 {
		return 0, false
	}
	return days + d, true
}

// usageError maps a store's answer: a bad query is the caller's 400, anything
// else is logged and Internal.
func (s *adminService) usageError(err error) error {
	if errors.Is(err, usage.ErrBadQuery) {
		msg := strings.TrimPrefix(err.Error(), usage.ErrBadQuery.Error()+": ")
		return invalidRequest("", msg)
	}
	return toStatus(s.log, err)
}

func (s *adminService) QueryUsage(ctx context.Context, req *adminpb.QueryUsageRequest) (*adminpb.QueryUsageResponse, error) {
	st, err := s.usageStore()
	if err != nil {
		return nil, err
	}
	from, to, err := usageRange(req.GetStartTime(), req.GetEndTime(), req.GetSince(), time.Now())
	if err != nil {
		return nil, err
	}
	q := usage.Query{Filter: usage.Filter{From: from, To: to, KeyID: req.GetKeyId(), Model: req.GetModel(),
		Provider: req.GetProvider(), Status: int(req.GetStatus())}, GroupBy: req.GetGroupBy(), Bucket: req.GetBucket()}
	groups, err := st.Query(ctx, q)
	if err != nil {
		return nil, s.usageError(err)
	}
	out := &adminpb.QueryUsageResponse{StartTime: from.UTC().Format(time.RFC3339Nano), EndTime: to.UTC().Format(time.RFC3339Nano),
		Groups: make([]*adminpb.UsageGroup, 0, len(groups))}
	for _, g := range groups {
		out.Groups = append(out.Groups, groupOf(g))
	}
	return out, nil
}

func groupOf(g usage.Group) *adminpb.UsageGroup {
	pg := &adminpb.UsageGroup{KeyId: g.Key[usage.ByKey], Model: g.Key[usage.ByModel], Provider: g.Key[usage.ByProvider],
		VirtualModel: g.Key[usage.ByVirtualModel], Endpoint: g.Key[usage.ByEndpoint], Target: g.Key[usage.ByTarget],
		Requests: g.Requests, Errors: g.Errors, UnpricedRequests: g.Unpriced,
		PromptTokens: g.Tokens.Prompt, CompletionTokens: g.Tokens.Completion, CachedTokens: g.Tokens.Cached,
		CacheWriteTokens: g.Tokens.CacheWrite, ReasoningTokens: g.Tokens.Reasoning, TokensEstimated: g.Tokens.Estimated,
		CostUsd: g.CostUSD, LatencyP50Ms: Millis(g.LatencyP50), LatencyP95Ms: Millis(g.LatencyP95),
		TtftP50Ms: Millis(g.TTFTP50), TtftP95Ms: Millis(g.TTFTP95)}
	if v, ok := g.Key[usage.ByStatus]; ok {
		n, _ := strconv.Atoi(v)
		pg.Status = int32(n)
	}
	if !g.Start.IsZero() {
		pg.BucketStart = g.Start.UTC().Format(time.RFC3339)
	}
	return pg
}

func (s *adminService) ListRequests(ctx context.Context, req *adminpb.ListRequestsRequest) (*adminpb.ListRequestsResponse, error) {
	st, err := s.usageStore()
	if err != nil {
		return nil, err
	}
	from, to, err := usageRange(req.GetStartTime(), req.GetEndTime(), req.GetSince(), time.Now())
	if err != nil {
		return nil, err
	}
	if req.GetPageSize() < 0 {
		return nil, invalidRequest("page_size", "page_size must not be negative")
	}
	page, err := st.List(ctx, usage.ListFilter{Filter: usage.Filter{From: from, To: to, KeyID: req.GetKeyId(), Model: req.GetModel(),
		Provider: req.GetProvider(), Status: int(req.GetStatus()), ErrorsOnly: req.GetErrorsOnly(), RequestID: req.GetRequestId()},
		PageSize: int(req.GetPageSize()), PageToken: req.GetPageToken()})
	if err != nil {
		return nil, s.usageError(err)
	}
	out := &adminpb.ListRequestsResponse{NextPageToken: page.NextPageToken, Records: make([]*adminpb.UsageRecord, 0, len(page.Records))}
	for i := range page.Records {
		out.Records = append(out.Records, recordOf(&page.Records[i]))
	}
	return out, nil
}

func recordOf(r *usage.Record) *adminpb.UsageRecord {
	pr := &adminpb.UsageRecord{Time: r.Time.UTC().Format(time.RFC3339Nano), RequestId: r.RequestID, Surface: r.Surface,
		Endpoint: r.Endpoint, Stream: r.Stream, KeyId: r.KeyID, Model: r.Model, VirtualModel: r.VirtualModel,
		Provider: r.Provider, TargetModel: r.TargetModel, Failovers: int32(r.Failovers), Resumes: int32(r.Resumes),
		Hedged: r.Hedged, PromptTokens: r.Tokens.Prompt, CompletionTokens: r.Tokens.Completion, CachedTokens: r.Tokens.Cached,
		CacheWriteTokens: r.Tokens.CacheWrite, ReasoningTokens: r.Tokens.Reasoning, TokensEstimated: r.Tokens.Estimated,
		CostUsd: r.CostUSD, LatencyMs: Millis(r.Latency), TtftMs: Millis(r.TTFT), Status: int32(r.Status), ErrorCode: r.ErrorCode}
	for _, a := range r.Attempts {
		pa := &adminpb.UsageAttempt{Target: a.Target, Outcome: a.Outcome, Status: int32(a.Status),
			LatencyMs: Millis(a.Latency), CostUsd: a.CostUSD}
		if t := a.Tokens; t != nil {
			pa.PromptTokens, pa.CompletionTokens, pa.TokensEstimated = &t.Prompt, &t.Completion, t.Estimated
		}
		pr.Attempts = append(pr.Attempts, pa)
	}
	return pr
}
