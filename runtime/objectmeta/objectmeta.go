// Package objectmeta reads the metadata of an object that an admission
// request carries, as JSON decoding left it. The protection decision
// (package decision) reads the deleted object's; the reference index
// (package index) that of a deleted dependent.
package objectmeta

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Of returns the metadata of obj; what does not decode is left empty.
func Of(obj map[string]interface{}) metav1.ObjectMeta {
	var m metav1.ObjectMeta
	if raw, ok := obj["metadata"]; ok {
		if b, err := json.Marshal(raw); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	return m
}
