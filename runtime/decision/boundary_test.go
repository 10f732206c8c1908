package decision

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// regionGVR is a cluster-scoped dependent type.
var regionGVR = schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "regions"}

// indexSchemas gives the index schema of each dependent type.
type indexSchemas map[schema.GroupResource]registry.Schema

func (s indexSchemas) IndexSchema(gr schema.GroupResource) registry.Schema { return s[gr] }

// boundaryRules: VirtualMachines reference VPCs by .spec.vpcRef.name,
// Regions (cluster-scoped) by .spec.vpc.
var boundaryRules = struct {
	schemas     indexSchemas
	protections fakeProtections
}{
	schemas: indexSchemas{
		vmGVR.GroupResource(): {Stamp: "s1", References: []registry.Reference{{Target: vpcGVR.GroupResource(), Version: "v1",
			Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}}},
		regionGVR.GroupResource(): {Stamp: "s2", References: []registry.Reference{{Target: vpcGVR.GroupResource(), Version: "v1",
			Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpc")}}}},
	},
	protections: fakeProtections{vpcGVR: {
		{Rule: "p1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}},
		{Rule: "p1/region-rule", Dependent: regionGVR, DependentKind: "Region", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpc")}},
	}},
}

// boundaryWebhook is the index and the validator of one webhook replica,
// reading and writing through a front-proxy that records what it is sent.
func boundaryWebhook(t *testing.T, fp *fakeFrontProxy) (*index.Indexer, *Validator) {
	t.Helper()
	finder := serveFinder(t, fp)
	ready := make(chan struct{})
	close(ready)
	ix := index.NewIndexer(boundaryRules.schemas, admission.When(ready), logr.Discard())
	ix.Targets = finder
	v := NewValidator(boundaryRules.protections, finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
	return ix, v
}

// object renders an object of a tenant: its metadata, with the logical
// cluster annotation when cluster is set, and spec.
func object(cluster, namespace, name string, annotations map[string]string, spec map[string]interface{}) runtime.RawExtension {
	md := map[string]interface{}{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	a := map[string]string{}
	for k, v := range annotations {
		a[k] = v
	}
	if cluster != "" {
		a[v1alpha1.ClusterAnnotation] = cluster
	}
	md["annotations"] = a
	raw, _ := json.Marshal(map[string]interface{}{"metadata": md, "spec": spec})
	return runtime.RawExtension{Raw: raw}
}

func vpcRef(name string) map[string]interface{} {
	return map[string]interface{}{"vpcRef": map[string]interface{}{"name": name}}
}

// TestRequestsStayInTheirCluster: whatever a request says, the webhook
// reads and writes only in the logical cluster kcp says the request is in.
func TestRequestsStayInTheirCluster(t *testing.T) {
	const escape = "../../../../../../../../clusters/tenant-b/apis/network.test.io/v1/namespaces/prod/vpcs/core"
	forgedIntent, _ := json.Marshal(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "prod",
		Name: "../../../../clusters/tenant-b/apis/compute.test.io/v1/namespaces/prod/virtualmachines/vm-b", At: metav1.NewTime(time.Now())})
	tests := []struct {
		name string
		// index says which webhook decides: the reference index, or the
		// deletion validator.
		index   bool
		req     admissionv1.AdmissionRequest
		allowed bool
		// want is every request the webhook sends, in any order (the
		// validator reads dependent types concurrently).
		want []string
	}{
		{
			name: "a reference that is a path references nothing, and is looked for nowhere", index: true,
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "prod", Name: "evil-1",
				Object: object("tenant-a", "prod", "evil-1", nil, vpcRef(escape))},
			allowed: true,
		},
		{
			name: "an update that forges kcp.io/cluster records in the stored object's cluster", index: true,
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: "prod", Name: "vm-2",
				OldObject: object("tenant-a", "prod", "vm-2", nil, vpcRef("vpc-1")),
				Object:    object("tenant-b", "prod", "vm-2", nil, vpcRef("vpc-2"))},
			allowed: true,
			want:    []string{"PATCH /clusters/tenant-a/apis/network.test.io/v1/namespaces/prod/vpcs/vpc-2"},
		},
		{
			name: "an update that forges a cluster that is a path is refused before anything is sent", index: true,
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: "prod", Name: "vm-2",
				OldObject: object("tenant-a/../tenant-b", "prod", "vm-2", nil, vpcRef("vpc-1")),
				Object:    object("tenant-a", "prod", "vm-2", nil, vpcRef("vpc-2"))},
		},
		{
			name: "a cluster-scoped dependent records on the namespaced object of that name, in its namespace", index: true,
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "region-1", Resource: metav1.GroupVersionResource(regionGVR),
				Object: object("tenant-a", "", "region-1", nil, map[string]interface{}{"vpc": "vpc-ns"})},
			allowed: true,
			want: []string{
				"PATCH /clusters/tenant-a/apis/network.test.io/v1/vpcs/vpc-ns",
				"GET /clusters/tenant-a/apis/network.test.io/v1/vpcs",
				"PATCH /clusters/tenant-a/apis/network.test.io/v1/namespaces/vrf-a/vpcs/vpc-ns",
			},
		},
		{
			name: "an intent naming a path is no blocker, and nothing is read where it points",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Namespace: "prod", Name: "core",
				OldObject: object("tenant-a", "prod", "core", map[string]string{v1alpha1.IntentAnnotationPrefix + "0123456789abcdef": string(forgedIntent)}, nil)},
			allowed: true,
			want: []string{
				"GET /clusters/tenant-a/apis/compute.test.io/v1/namespaces/prod/regions",
				"GET /clusters/tenant-a/apis/compute.test.io/v1/regions",
				"GET /clusters/tenant-a/apis/compute.test.io/v1/namespaces/prod/virtualmachines",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &fakeFrontProxy{clusterScoped: map[string]bool{"tenant-a|regions": true, "tenant-b|regions": true}}
			for _, c := range []string{"tenant-a", "tenant-b"} {
				for _, vpc := range []string{"core", "vpc-1", "vpc-2"} {
					fp.add(c, vpcGVR, "prod", vpc, map[string]interface{}{})
				}
				fp.add(c, vpcGVR, "vrf-a", "vpc-ns", map[string]interface{}{})
			}
			fp.add("tenant-b", vmGVR, "prod", "vm-b", map[string]interface{}{"spec": vpcRef("core")})
			ix, v := boundaryWebhook(t, fp)
			req := tt.req
			req.UID = "u"
			if req.Resource.Resource == "" {
				req.Resource = metav1.GroupVersionResource(vmGVR)
				if !tt.index {
					req.Resource = metav1.GroupVersionResource(vpcGVR)
				}
			}
			decide := v.Decide
			if tt.index {
				decide = ix.Decide
			}
			resp, outcome := decide(context.Background(), &req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v (%s: %v), want %v", resp.Allowed, outcome, resp.Result, tt.allowed)
			}
			got := fp.sent()
			onlyIn(t, got, "tenant-a")
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("sent %q, want %q", got, tt.want)
			}
		})
	}
}

// TestScopeIsLearnedPerCluster: a workspace whose own type of a dependent's
// group and resource is cluster-scoped says nothing of the bound type in
// another workspace. A VM in namespace b that references its own b/vpc-x
// does not hold up the deletion of a/vpc-x.
func TestScopeIsLearnedPerCluster(t *testing.T) {
	fp := &fakeFrontProxy{clusterScoped: map[string]bool{"tenant-own|virtualmachines": true, "tenant-own|regions": true, "tenant-a|regions": true}}
	fp.add("tenant-own", vpcGVR, "a", "vpc-x", map[string]interface{}{})
	fp.add("tenant-own", vmGVR, "", "vm-own", map[string]interface{}{"spec": vpcRef("other")})
	fp.add("tenant-a", vpcGVR, "a", "vpc-x", map[string]interface{}{})
	fp.add("tenant-a", vpcGVR, "b", "vpc-x", map[string]interface{}{})
	fp.add("tenant-a", vmGVR, "b", "vm-b", map[string]interface{}{"spec": vpcRef("vpc-x")})
	_, v := boundaryWebhook(t, fp)
	for _, cluster := range []string{"tenant-own", "tenant-a"} {
		req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Delete, Resource: metav1.GroupVersionResource(vpcGVR),
			Namespace: "a", Name: "vpc-x", OldObject: object(cluster, "a", "vpc-x", nil, nil)}
		if resp, outcome := v.Decide(context.Background(), req); !resp.Allowed {
			t.Fatalf("deleting a/vpc-x in %s: %s: %v; only b/vpc-x is referenced", cluster, outcome, resp.Result)
		}
	}
}
