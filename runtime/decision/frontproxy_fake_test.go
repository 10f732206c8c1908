package decision

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeFrontProxy serves objects by logical cluster the way kcp's
// front-proxy does, closely enough for the finder: GET of one object, and
// JSON and merge PATCH (a JSON patch whose test fails is refused as the API
// server refuses it), LIST of a collection (in a namespace or across all,
// by metadata.name field selector, and APIBindings by label), POST to a
// collection, logicalclusters/cluster; a resource is namespaced unless
// clusterScoped says otherwise in that cluster. It records every request
// it is sent, as "METHOD path".
type fakeFrontProxy struct {
	mu            sync.Mutex
	objects       []fakeObject
	clusterScoped map[string]bool // "cluster|resource"
	// forbidden refuses every request for an object, by
	// "cluster|resource|namespace|name".
	forbidden map[string]bool
	// forbiddenResources refuses every request for a resource, by
	// "cluster|resource".
	forbiddenResources map[string]bool
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
	if s.forbiddenResources[cluster+"|"+resource] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
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
		wantName := ""
		if fs := r.URL.Query().Get("fieldSelector"); fs != "" {
			sel, err := fields.ParseSelector(fs)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			wantName, _ = sel.RequiresExactMatch("metadata.name")
		}
		var byLabel labels.Selector
		if resource == "apibindings" {
			var err error
			if byLabel, err = labels.Parse(r.URL.Query().Get("labelSelector")); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		var items []interface{}
		for _, o := range s.objects {
			if byLabel != nil && !byLabel.Matches(labels.Set(labelsOf(o.body))) {
				continue
			}
			if o.cluster == cluster && o.resource == resource && (namespace == "" || o.namespace == namespace) && (wantName == "" || o.name == wantName) {
				items = append(items, o.body)
			}
		}
		writeJSON(w, map[string]interface{}{"metadata": map[string]interface{}{"resourceVersion": "10"}, "items": items})
		return
	}
	if s.forbidden[cluster+"|"+resource+"|"+namespace+"|"+name] {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, "forbidden")
		return
	}
	for i, o := range s.objects {
		if o.cluster == cluster && o.resource == resource && o.namespace == namespace && o.name == name {
			if r.Method == http.MethodPatch {
				s.patch(w, r, &s.objects[i])
				return
			}
			writeJSON(w, o.body)
			return
		}
	}
	notFound(w)
}

func labelsOf(body map[string]interface{}) map[string]string {
	md, _ := body["metadata"].(map[string]interface{})
	l, _ := md["labels"].(map[string]interface{})
	out := map[string]string{}
	for k, v := range l {
		out[k], _ = v.(string)
	}
	return out
}

// patch applies the request's patch to o as the API server does. A JSON
// patch that fails (its test included) is refused with 422 Invalid and no
// causes.
func (s *fakeFrontProxy) patch(w http.ResponseWriter, r *http.Request, o *fakeObject) {
	body, _ := io.ReadAll(r.Body)
	doc, _ := json.Marshal(o.body)
	var patched []byte
	var err error
	switch r.Header.Get("Content-Type") {
	case "application/json-patch+json":
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(body); err == nil {
			patched, err = p.Apply(doc)
		}
		if err != nil {
			writeStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "the server rejected our request due to an error in our request")
			return
		}
	case "application/merge-patch+json":
		if patched, err = jsonpatch.MergePatch(doc, body); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
			return
		}
	default:
		writeStatus(w, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, r.Header.Get("Content-Type"))
		return
	}
	var next map[string]interface{}
	_ = json.Unmarshal(patched, &next)
	o.body = next
	writeJSON(w, next)
}

// annotations are the annotations the fake holds on an object.
func (s *fakeFrontProxy) annotations(cluster string, gvr schema.GroupVersionResource, namespace, name string) map[string]interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.objects {
		if o.cluster == cluster && o.resource == gvr.Resource && o.namespace == namespace && o.name == name {
			md, _ := o.body["metadata"].(map[string]interface{})
			a, _ := md["annotations"].(map[string]interface{})
			return a
		}
	}
	return nil
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
}

func writeStatus(w http.ResponseWriter, code int32, reason metav1.StatusReason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(code))
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: code, Reason: reason, Message: message, Details: &metav1.StatusDetails{}})
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
