package decision

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeFrontProxy serves objects by logical cluster the way kcp's
// front-proxy does, closely enough for the finder: GET and PATCH of one
// object, LIST of a collection (in a namespace or across all, by
// metadata.name field selector), POST to a collection,
// logicalclusters/cluster; a resource is namespaced unless clusterScoped
// says otherwise in that cluster. It records every request it is sent, as
// "METHOD path".
type fakeFrontProxy struct {
	mu            sync.Mutex
	objects       []fakeObject
	clusterScoped map[string]bool // "cluster|resource"
	// logicalClusters are the LogicalCluster objects by cluster; a Ready
	// one where none is given.
	logicalClusters map[string]map[string]interface{}
	requests        []string
}

type fakeObject struct {
	cluster, resource, namespace, name string
	body                               map[string]interface{}
}

func (s *fakeFrontProxy) add(cluster string, gvr schema.GroupVersionResource, namespace, name string, body map[string]interface{}) {
	md, _ := body["metadata"].(map[string]interface{})
	if md == nil {
		md = map[string]interface{}{}
		body["metadata"] = md
	}
	md["name"] = name
	if namespace != "" {
		md["namespace"] = namespace
	}
	s.objects = append(s.objects, fakeObject{cluster: cluster, resource: gvr.Resource, namespace: namespace, name: name, body: body})
}

func (s *fakeFrontProxy) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *fakeFrontProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	// clusters/<c>/apis/<g>/<v>/[namespaces/<ns>/]<resource>[/<name>]
	if len(parts) < 6 || parts[0] != "clusters" || parts[2] != "apis" {
		notFound(w)
		return
	}
	cluster, rest := parts[1], parts[5:]
	namespace := ""
	if len(rest) >= 3 && rest[0] == "namespaces" {
		namespace, rest = rest[1], rest[2:]
	}
	resource, name := rest[0], ""
	if len(rest) > 1 {
		name = rest[1]
	}
	if resource == "logicalclusters" {
		lc, ok := s.logicalClusters[cluster]
		if !ok {
			lc = map[string]interface{}{"metadata": map[string]interface{}{"name": "cluster"}, "status": map[string]interface{}{"phase": "Ready"}}
		}
		writeJSON(w, lc)
		return
	}
	clusterScoped := s.clusterScoped[cluster+"|"+resource]
	if (clusterScoped && namespace != "") || (!clusterScoped && namespace == "" && name != "") {
		notFound(w)
		return
	}
	if name == "" && r.Method == http.MethodPost {
		var body map[string]interface{}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		md, _ := body["metadata"].(map[string]interface{})
		created, _ := md["name"].(string)
		s.objects = append(s.objects, fakeObject{cluster: cluster, resource: resource, namespace: namespace, name: created, body: body})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	if name == "" {
		wantName := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
		var items []interface{}
		for _, o := range s.objects {
			if o.cluster == cluster && o.resource == resource && (namespace == "" || o.namespace == namespace) && (wantName == "" || o.name == wantName) {
				items = append(items, o.body)
			}
		}
		writeJSON(w, map[string]interface{}{"metadata": map[string]interface{}{"resourceVersion": "10"}, "items": items})
		return
	}
	for _, o := range s.objects {
		if o.cluster == cluster && o.resource == resource && o.namespace == namespace && o.name == name {
			writeJSON(w, o.body)
			return
		}
	}
	notFound(w)
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
}

func writeJSON(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// onlyIn fails t when a request went to another logical cluster than
// cluster.
func onlyIn(t testing.TB, requests []string, cluster string) {
	t.Helper()
	for _, r := range requests {
		_, p, _ := strings.Cut(r, " ")
		if !strings.HasPrefix(p, "/clusters/"+cluster+"/") {
			t.Fatalf("a request from logical cluster %s was sent to %s (all: %v)", cluster, r, requests)
		}
	}
}
