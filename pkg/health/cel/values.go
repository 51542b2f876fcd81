package cel

import (
	"errors"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Health checks spend most of their time reading object fields and walking
// condition lists, so the values of unstructured objects (JSON maps, lists,
// strings, numbers, booleans, null) get their own CEL representation:
//   - one small allocation per map or list instead of cel-go's two or three,
//     the maps of a list allocated together, and no reflection to read an
//     element;
//   - each value read from the object is charged to the evaluation's budget.
//
// jsonMap and jsonList behave exactly as cel-go's types.NewStringInterfaceMap
// and types.NewDynamicList do: the methods on the hot path are written here,
// mirroring cel-go's, and the others are delegated to cel-go's own values.

// objectAdapter converts values for cel-go, outside any budget; values that
// come from an Activation carry its budget instead.
type objectAdapter struct{}

var adapter types.Adapter = objectAdapter{}

// NativeToValue implements types.Adapter.
func (objectAdapter) NativeToValue(value any) ref.Val {
	switch v := value.(type) {
	case types.String, types.Int, types.Bool, types.Double, *jsonMap, *jsonList:
		return v.(ref.Val)
	}
	return convert(nil, value)
}

// convert turns a value of an unstructured object into a CEL value, charging
// b for the read.
func convert(b *budget, value any) ref.Val {
	switch v := value.(type) {
	case string:
		b.charge(1 + uint64(len(v))/64)
		return types.String(v)
	case int64:
		b.charge(1)
		return types.Int(v)
	case bool:
		b.charge(1)
		return types.Bool(v)
	case float64:
		b.charge(1)
		return types.Double(v)
	case map[string]any:
		b.charge(1)
		return &jsonMap{m: v, b: b}
	case []any:
		b.charge(1)
		return &jsonList{l: v, b: b}
	case nil:
		b.charge(1)
		return types.NullValue
	}
	b.charge(1)
	return types.DefaultTypeAdapter.NativeToValue(value)
}

// jsonMap is a map[string]any as a CEL map.
type jsonMap struct {
	m map[string]any
	b *budget
	// memo, on the object's top-level maps only, keeps the values read from
	// them: the expressions of a check read status.conditions one after the
	// other, and then share one list and its elements.
	memo *memo
}

type memo struct {
	keys [4]string
	vals [4]ref.Val
	n    int
}

func (m *memo) get(key string) (ref.Val, bool) {
	for i, k := range m.keys[:m.n] {
		if k == key {
			return m.vals[i], true
		}
	}
	return nil, false
}

func (m *memo) put(key string, val ref.Val) {
	if m.n < len(m.keys) {
		m.keys[m.n], m.vals[m.n] = key, val
		m.n++
	}
}

// readCost is what reading v from an object costs, as convert charges it.
func readCost(v ref.Val) uint64 {
	if s, ok := v.(types.String); ok {
		return 1 + uint64(len(s))/64
	}
	return 1
}

var (
	_ traits.Mapper   = (*jsonMap)(nil)
	_ traits.Foldable = (*jsonMap)(nil)
	_ traits.Zeroer   = (*jsonMap)(nil)
)

// celgo returns cel-go's own value for the map, for the methods that are not
// on the hot path.
func (m *jsonMap) celgo() traits.Mapper { return types.NewStringInterfaceMap(adapter, m.m) }

// Find implements traits.Mapper: only string keys can be present.
func (m *jsonMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	if m.memo != nil {
		if v, ok := m.memo.get(string(k)); ok {
			m.b.charge(readCost(v))
			return v, true
		}
	}
	v, found := m.m[string(k)]
	if !found {
		return nil, false
	}
	val := convert(m.b, v)
	if m.memo != nil {
		m.memo.put(string(k), val)
	}
	return val, true
}

// Get implements traits.Indexer.
func (m *jsonMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains implements traits.Container.
func (m *jsonMap) Contains(key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

// Equal implements ref.Val as cel-go's maps do: same size, and every key of
// this map holds an equal value in the other.
func (m *jsonMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if m.Size() != o.Size() {
		return types.False
	}
	for k, v := range m.m {
		key := types.String(k)
		ov, found := o.Find(key)
		if !found {
			return types.False
		}
		if types.Equal(convert(m.b, v), ov) == types.False {
			return types.False
		}
	}
	return types.True
}

// Size implements traits.Sizer.
func (m *jsonMap) Size() ref.Val { return types.Int(len(m.m)) }

// IsZeroValue implements traits.Zeroer.
func (m *jsonMap) IsZeroValue() bool { return len(m.m) == 0 }

// Type implements ref.Val.
func (m *jsonMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *jsonMap) Value() any { return m.m }

// Iterator implements traits.Iterable.
func (m *jsonMap) Iterator() traits.Iterator { return m.celgo().Iterator() }

// Fold implements traits.Foldable.
func (m *jsonMap) Fold(f traits.Folder) { m.celgo().(traits.Foldable).Fold(f) }

// ConvertToNative implements ref.Val.
func (m *jsonMap) ConvertToNative(t reflect.Type) (any, error) { return m.celgo().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (m *jsonMap) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return m
	}
	return m.celgo().ConvertToType(t)
}

// String formats the map as cel-go does.
func (m *jsonMap) String() string { return m.celgo().(interface{ String() string }).String() }

// jsonList is a []any as a CEL list.
type jsonList struct {
	l []any
	b *budget
	// maps holds the CEL values of the map elements, allocated together on
	// the first read: condition lists are lists of maps.
	maps []jsonMap
	// it is handed out by the first call of Iterator: most lists are
	// walked once.
	it     jsonListIterator
	itUsed bool
}

var (
	_ traits.Lister   = (*jsonList)(nil)
	_ traits.Foldable = (*jsonList)(nil)
	_ traits.Zeroer   = (*jsonList)(nil)
)

func (l *jsonList) celgo() traits.Lister { return types.NewDynamicList(adapter, l.l) }

// elem converts element i, which must be in range.
func (l *jsonList) elem(i int) ref.Val {
	m, ok := l.l[i].(map[string]any)
	if !ok {
		return convert(l.b, l.l[i])
	}
	l.b.charge(1)
	if len(l.maps) != len(l.l) {
		if cap(l.maps) >= len(l.l) {
			l.maps = l.maps[:len(l.l)]
		} else {
			l.maps = make([]jsonMap, len(l.l))
		}
	}
	l.maps[i] = jsonMap{m: m, b: l.b}
	return &l.maps[i]
}

// Get implements traits.Indexer.
func (l *jsonList) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	if i < 0 || i >= len(l.l) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, l.Size())
	}
	return l.elem(i)
}

// Contains implements traits.Container as cel-go's lists do.
func (l *jsonList) Contains(elem ref.Val) ref.Val {
	for i := range l.l {
		if eq, ok := elem.Equal(l.elem(i)).(types.Bool); ok && eq == types.True {
			return types.True
		}
	}
	return types.False
}

// Equal implements ref.Val as cel-go's lists do: same size, equal elements
// in order.
func (l *jsonList) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.False
	}
	if l.Size() != o.Size() {
		return types.False
	}
	for i := range l.l {
		if types.Equal(l.elem(i), o.Get(types.Int(i))) == types.False {
			return types.False
		}
	}
	return types.True
}

// Size implements traits.Sizer.
func (l *jsonList) Size() ref.Val { return types.Int(len(l.l)) }

// IsZeroValue implements traits.Zeroer.
func (l *jsonList) IsZeroValue() bool { return len(l.l) == 0 }

// Type implements ref.Val.
func (l *jsonList) Type() ref.Type { return types.ListType }

// Value implements ref.Val.
func (l *jsonList) Value() any { return l.l }

// Iterator implements traits.Iterable.
func (l *jsonList) Iterator() traits.Iterator {
	if !l.itUsed {
		l.itUsed = true
		l.it = jsonListIterator{list: l}
		return &l.it
	}
	return &jsonListIterator{list: l}
}

// Fold implements traits.Foldable.
func (l *jsonList) Fold(f traits.Folder) {
	for i, v := range l.l {
		if !f.FoldEntry(i, v) {
			break
		}
	}
}

// Add implements traits.Adder.
func (l *jsonList) Add(other ref.Val) ref.Val { return l.celgo().Add(other) }

// ConvertToNative implements ref.Val.
func (l *jsonList) ConvertToNative(t reflect.Type) (any, error) { return l.celgo().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (l *jsonList) ConvertToType(t ref.Type) ref.Val {
	if t == types.ListType {
		return l
	}
	return l.celgo().ConvertToType(t)
}

// String formats the list as cel-go does.
func (l *jsonList) String() string { return l.celgo().(interface{ String() string }).String() }

// jsonListIterator walks a jsonList. As cel-go's iterators, it lives inside
// comprehensions only and is neither comparable nor convertible.
type jsonListIterator struct {
	list   *jsonList
	cursor int
}

func (it *jsonListIterator) HasNext() ref.Val { return types.Bool(it.cursor < len(it.list.l)) }

func (it *jsonListIterator) Next() ref.Val {
	if it.cursor >= len(it.list.l) {
		return nil
	}
	it.cursor++
	return it.list.elem(it.cursor - 1)
}

func (*jsonListIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("type conversion on iterators not supported")
}
func (*jsonListIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (*jsonListIterator) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (*jsonListIterator) Type() ref.Type                 { return types.IteratorType }
func (*jsonListIterator) Value() any                     { return nil }
