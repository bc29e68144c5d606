package contract

// KeyDoc is the doc comment of the key constant whose value is key (an annotation or label
// key, such as PoliciesAnnotationKey's), made one paragraph; "" for an unknown key. Like Doc
// and Values, it is generated from this package's source by `make docs`, as
// docs/reference.md is (zz_generated_docs.go).
func KeyDoc(key string) string { return generatedKeyDocs[key] }

// Doc is the doc comment of an exported type of this package ("VolumeClaimPolicy") or of a
// field of one by its JSON name ("VolumeClaimPolicy.templates"), made one paragraph; "" when
// there is none.
func Doc(name string) string { return generatedDocs[name] }

// Values are the values of an enum type of this package ("RetentionPolicyType"), as its
// constants declare them; nil for another type.
func Values(typeName string) []string { return generatedValues[typeName] }
