package decision

import (
	"net/http"
)

// kcp-front-proxy answers 502 Bad Gateway with an empty body when it could
// not carry a request to its shard: in v0.32.3 it keeps an idle connection
// to a shard as long as the shard does (90 seconds), and a request whose
// body it has sent as the shard closes that connection cannot be replayed
// (test/kcp/patches/kcp_front_proxy_idle_conn.patch, for upstream).
// client-go does not retry a 502 without Retry-After, so without this the
// webhook would refuse the write whose intent it failed to record, a
// legitimate write refused for a lost connection.
//
// retryLost sends such a request once more. Only requests that mean the
// same sent twice are repeated: reads, and the webhook's PATCHes, each of
// which sets annotations and labels to given values or tests a value before
// it removes it. Nothing else is: a POST or DELETE that the shard carried
// out before the connection was lost must not be repeated, and a 502 with a
// body is someone's answer, not a lost request.
type retryLost struct {
	next http.RoundTripper
}

// lostByProxy reports whether resp is the front-proxy's answer to a
// request it could not carry to a shard.
func lostByProxy(resp *http.Response) bool {
	return resp.StatusCode == http.StatusBadGateway && resp.ContentLength == 0
}

// repeatable reports whether req may be sent again as it is.
func repeatable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPatch:
		return req.GetBody != nil
	}
	return false
}

func (r retryLost) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || !lostByProxy(resp) || !repeatable(req) || req.Context().Err() != nil {
		return resp, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		body, berr := req.GetBody()
		if berr != nil {
			return resp, err
		}
		again.Body = body
	}
	_ = resp.Body.Close()
	return r.next.RoundTrip(again)
}
