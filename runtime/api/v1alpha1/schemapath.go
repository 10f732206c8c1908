package v1alpha1

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

// Reasons a field path does not fit a schema.
const (
	ReasonFieldPathNotInSchema = "FieldPathNotInSchema"
	ReasonFieldPathNotString   = "FieldPathNotString"
)

// fieldInSchema checks that objects validated by the structural schema s
// can hold a string at p. It returns an empty reason when they can, and
// also wherever the schema cannot say: no schema, a level that preserves
// unknown fields (x-kubernetes-preserve-unknown-fields) or allows any
// property, an untyped value (x-kubernetes-int-or-string), and metadata,
// apiVersion and kind, which the server defines. Otherwise it says where
// the path leaves the schema. A field a structural schema does not know is
// pruned on every write, so a rule on it would protect nothing.
func fieldInSchema(s *apiextensionsv1.JSONSchemaProps, p fieldpath.Path) (reason, detail string) {
	cur := s
	walked := ""
	for i, seg := range p.Segments() {
		if cur == nil {
			return "", ""
		}
		if (i == 0 || cur.XEmbeddedResource) && (seg.Field == "metadata" || seg.Field == "apiVersion" || seg.Field == "kind") {
			return "", ""
		}
		if next, ok := cur.Properties[seg.Field]; ok {
			cur = &next
		} else {
			switch {
			case preservesUnknown(cur):
				return "", ""
			case cur.AdditionalProperties != nil && cur.AdditionalProperties.Schema != nil:
				cur = cur.AdditionalProperties.Schema
			case cur.AdditionalProperties != nil && cur.AdditionalProperties.Allows:
				return "", ""
			case cur.Type != "" && cur.Type != "object":
				return ReasonFieldPathNotInSchema, fmt.Sprintf("%s is %s, which has no field %s", where(walked), typeName(cur.Type), seg.Field)
			default:
				return ReasonFieldPathNotInSchema, fmt.Sprintf("%s has no field %s", where(walked), seg.Field)
			}
		}
		walked += "." + seg.Field
		if !seg.Each {
			continue
		}
		switch {
		case cur.Type == "" || (cur.Type != "array" && preservesUnknown(cur)):
			return "", ""
		case cur.Type != "array":
			return ReasonFieldPathNotInSchema, fmt.Sprintf("%s is %s, not a list, so [*] finds nothing", walked, typeName(cur.Type))
		case cur.Items == nil || cur.Items.Schema == nil:
			return "", ""
		}
		cur = cur.Items.Schema
		walked += "[*]"
	}
	if cur != nil && cur.Type != "" && cur.Type != "string" {
		return ReasonFieldPathNotString, fmt.Sprintf("%s is %s, not a string, so it never names an object", walked, typeName(cur.Type))
	}
	return "", ""
}

func preservesUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func where(walked string) string {
	if walked == "" {
		return "the object"
	}
	return walked
}

func typeName(t string) string {
	switch t {
	case "object":
		return "an object"
	case "array":
		return "a list"
	case "integer":
		return "an integer"
	}
	return "a " + t
}
