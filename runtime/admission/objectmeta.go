package admission

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetaOf returns the metadata of obj, an object an admission request
// carries as JSON decoding left it; what does not decode is left empty. The
// protection decision (package decision) reads the deleted object's, the
// reference index (package index) that of a written or deleted dependent.
func MetaOf(obj map[string]interface{}) metav1.ObjectMeta {
	var m metav1.ObjectMeta
	if raw, ok := obj["metadata"]; ok {
		if b, err := json.Marshal(raw); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	return m
}
