package decision

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// lossyProxy answers the first request the way kcp-front-proxy answers one
// it could not carry to its shard, or with first, and every later one with
// 200 and the body it was sent (or {} for a request without one).
type lossyProxy struct {
	mu     sync.Mutex
	first  func(w http.ResponseWriter)
	bodies []string
}

func (p *lossyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, r.Method+" "+string(body))
	n := len(p.bodies)
	p.mu.Unlock()
	if n == 1 {
		p.first(w)
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func TestRetryLost(t *testing.T) {
	lost := func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }
	answered := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "upstream says no")
	}
	const patch = `{"metadata":{"annotations":{"k":"v"}}}`
	for _, tc := range []struct {
		name  string
		first func(w http.ResponseWriter)
		send  func(c rest.Interface) *rest.Request
		// sent is what the proxy was sent, in order.
		sent    []string
		wantErr bool
	}{
		{"a lost GET is sent again", lost,
			func(c rest.Interface) *rest.Request { return c.Get().AbsPath("/x") },
			[]string{"GET ", "GET "}, false},
		{"a lost PATCH is sent again, with its body", lost,
			func(c rest.Interface) *rest.Request {
				return c.Patch(types.MergePatchType).AbsPath("/x").Body([]byte(patch))
			},
			[]string{"PATCH " + patch, "PATCH " + patch}, false},
		{"a lost POST is not: the shard may have carried it out", lost,
			func(c rest.Interface) *rest.Request { return c.Post().AbsPath("/x").Body([]byte(`{}`)) },
			[]string{"POST {}"}, true},
		{"a lost DELETE is not", lost,
			func(c rest.Interface) *rest.Request { return c.Delete().AbsPath("/x") },
			[]string{"DELETE "}, true},
		{"a 502 with a body is an answer, not a lost request", answered,
			func(c rest.Interface) *rest.Request { return c.Get().AbsPath("/x") },
			[]string{"GET "}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &lossyProxy{first: tc.first}
			f := serveFinder(t, p)
			err := tc.send(f.RESTClient()).Do(context.Background()).Error()
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want one: %v", err, tc.wantErr)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.bodies) != len(tc.sent) {
				t.Fatalf("the proxy was sent %q, want %q", p.bodies, tc.sent)
			}
			for i := range tc.sent {
				if p.bodies[i] != tc.sent[i] {
					t.Errorf("request %d was %q, want %q", i, p.bodies[i], tc.sent[i])
				}
			}
		})
	}
}
