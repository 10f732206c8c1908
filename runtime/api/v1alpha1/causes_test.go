package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDependentCause(t *testing.T) {
	ref := DependentRef{Workspace: "2x8ab", Group: "compute.example.dev", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine", Namespace: "team-a", Name: "vm-1"}
	tests := []struct {
		name    string
		cause   metav1.StatusCause
		want    DependentRef
		pending bool
		ok      bool
		wantErr bool
	}{
		{name: "stored", cause: DependentCause(ref, false), want: ref, ok: true},
		{name: "being written", cause: DependentCause(ref, true), want: ref, pending: true, ok: true},
		{name: "another cause", cause: metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "{}"}},
		{name: "a message that is no dependent", cause: metav1.StatusCause{Type: CauseStoredDependent, Message: "vm-1"}, ok: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pending, ok, err := DependentOf(tt.cause)
			if (err != nil) != tt.wantErr || ok != tt.ok || pending != tt.pending || got != tt.want {
				t.Errorf("DependentOf(%+v) = %+v, %v, %v, %v; want %+v, %v, %v, error %v", tt.cause, got, pending, ok, err, tt.want, tt.pending, tt.ok, tt.wantErr)
			}
		})
	}
}
