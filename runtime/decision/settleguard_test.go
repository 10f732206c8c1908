package decision

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

type candidateLog []string

func (c *candidateLog) Created(cluster string, gvr schema.GroupVersionResource, namespace string) {
	*c = append(*c, cluster+" "+gvr.Resource+" "+namespace)
}

func (c *candidateLog) Deleted(cluster string, gvr schema.GroupVersionResource, namespace string) {
	*c = append(*c, cluster+" "+gvr.Resource+" "+namespace+" deleted")
}

// writeRequest is a create (old == nil) or update of a VPC whose objects
// carry labels.
func writeRequest(op admissionv1.Operation, user string, old, labels map[string]string) *admissionv1.AdmissionRequest {
	object := func(l map[string]string) runtime.RawExtension {
		raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "v", "namespace": "default", "labels": l,
			"annotations": map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}}})
		return runtime.RawExtension{Raw: raw}
	}
	r := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Resource: metav1.GroupVersionResource(vpcGVR), Namespace: "default", Name: "v",
		Object: object(labels), UserInfo: authenticationv1.UserInfo{Username: user}}
	if op == admissionv1.Update {
		r.OldObject = object(old)
	}
	return r
}

// TestGuardSettled: nobody but the webhook may set the settled label or
// change its value, by create or update; anyone may remove it or leave it
// as it is. Creates are handed on as candidates for settling, except dry
// runs and refused ones.
func TestGuardSettled(t *testing.T) {
	settled := map[string]string{settle.SettledLabel: "s1"}
	other := map[string]string{settle.SettledLabel: "s2"}
	tests := []struct {
		name      string
		req       *admissionv1.AdmissionRequest
		allowed   bool
		candidate bool
	}{
		{"create without the label", writeRequest(admissionv1.Create, "alice", nil, nil), true, true},
		{"create with the label", writeRequest(admissionv1.Create, "alice", nil, settled), false, false},
		{"create with an empty label", writeRequest(admissionv1.Create, "alice", nil, map[string]string{settle.SettledLabel: ""}), false, false},
		{"the webhook's own create with the label", writeRequest(admissionv1.Create, "webhook", nil, settled), true, true},
		{"update that adds the label", writeRequest(admissionv1.Update, "alice", nil, settled), false, false},
		{"update that changes the label", writeRequest(admissionv1.Update, "alice", other, settled), false, false},
		{"update that keeps the label", writeRequest(admissionv1.Update, "alice", settled, settled), true, false},
		{"update that removes the label", writeRequest(admissionv1.Update, "alice", settled, nil), true, false},
		{"the webhook settling an object", writeRequest(admissionv1.Update, "webhook", nil, settled), true, false},
		// A workspace may authenticate users of its own, of any name
		// kcp does not reserve: kcp scopes them to that workspace.
		{"a user of the webhook's name scoped to a workspace", withExtra(writeRequest(admissionv1.Update, "webhook", nil, settled), "authentication.kcp.io/scopes", "cluster:consumer-1"), false, false},
		{"a service account of the webhook's name", withExtra(writeRequest(admissionv1.Update, "webhook", nil, settled), "authentication.kcp.io/cluster-name", "consumer-1"), false, false},
		{"the webhook with extras of other kinds", withExtra(writeRequest(admissionv1.Update, "webhook", nil, settled), "example.org/session", "s"), true, false},
		{"a dry-run create", func() *admissionv1.AdmissionRequest {
			r := writeRequest(admissionv1.Create, "alice", nil, nil)
			r.DryRun = ptr.To(true)
			return r
		}(), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var heard candidateLog
			v := NewValidator(fakeProtections{}, &fakeFinder{}, admission.When(closed()), ValidatorOptions{
				Self:       selfNamed("webhook", nil),
				Candidates: &heard,
			}, logr.Discard())
			resp, _ := v.Decide(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed && (resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, "only the dependency webhook may set the label "+settle.SettledLabel)) {
				t.Errorf("refusal %d %q does not say why", resp.Result.Code, resp.Result.Message)
			}
			if got := len(heard) == 1 && heard[0] == "consumer-1 vpcs default"; got != tt.candidate {
				t.Errorf("candidates heard %v, want a candidate: %v", heard, tt.candidate)
			}
		})
	}
}

// withExtra sets the extra key of r's user to values.
func withExtra(r *admissionv1.AdmissionRequest, key string, values ...string) *admissionv1.AdmissionRequest {
	r.UserInfo.Extra = map[string]authenticationv1.ExtraValue{key: values}
	return r
}

// selfNamed is ValidatorOptions.Self for a webhook that kcp knows by name,
// with no extras of its own, or that cannot tell who it is (err).
func selfNamed(name string, err error) func(context.Context) (authenticationv1.UserInfo, error) {
	return func(context.Context) (authenticationv1.UserInfo, error) {
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return authenticationv1.UserInfo{Username: name}, nil
	}
}

// TestIsSelf: the webhook is its name with kcp's authentication extras as
// its own are: a service account's or a workspace-scoped user's extras make
// another user of the same name.
func TestIsSelf(t *testing.T) {
	sa := map[string]authenticationv1.ExtraValue{"authentication.kcp.io/cluster-name": {"depctrl"}, "authentication.kcp.io/scopes": {"cluster:depctrl"}}
	for _, tt := range []struct {
		name  string
		self  authenticationv1.UserInfo
		user  string
		extra map[string][]string
		want  bool
	}{
		{name: "the same name, no extras", self: authenticationv1.UserInfo{Username: "webhook"}, user: "webhook", want: true},
		{name: "another name", self: authenticationv1.UserInfo{Username: "webhook"}, user: "alice"},
		{name: "scoped to a workspace", self: authenticationv1.UserInfo{Username: "webhook"}, user: "webhook",
			extra: map[string][]string{"authentication.kcp.io/scopes": {"cluster:tenant"}}},
		{name: "a service account webhook, as itself", self: authenticationv1.UserInfo{Username: "system:serviceaccount:depctrl:webhook", Extra: sa},
			user: "system:serviceaccount:depctrl:webhook", extra: map[string][]string{"authentication.kcp.io/cluster-name": {"depctrl"}, "authentication.kcp.io/scopes": {"cluster:depctrl"}}, want: true},
		{name: "a service account of the name in another workspace", self: authenticationv1.UserInfo{Username: "system:serviceaccount:depctrl:webhook", Extra: sa},
			user: "system:serviceaccount:depctrl:webhook", extra: map[string][]string{"authentication.kcp.io/cluster-name": {"tenant"}, "authentication.kcp.io/scopes": {"cluster:tenant"}}},
		{name: "other extras do not matter", self: authenticationv1.UserInfo{Username: "webhook"}, user: "webhook", extra: map[string][]string{"example.org/session": {"s"}}, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			self := tt.self
			v := NewValidator(fakeProtections{}, &fakeFinder{}, admission.When(closed()), ValidatorOptions{
				Self: func(context.Context) (authenticationv1.UserInfo, error) { return self, nil },
			}, logr.Discard())
			if got := v.isSelf(context.Background(), tt.user, tt.extra); got != tt.want {
				t.Errorf("isSelf = %v, want %v", got, tt.want)
			}
		})
	}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
