/// A binary heap whose top is the element `isAbove` puts above all others.
struct Heap<Element> {
    private(set) var elements: [Element] = []
    private let isAbove: (Element, Element) -> Bool

    init(isAbove: @escaping (Element, Element) -> Bool) {
        self.isAbove = isAbove
    }

    var count: Int { elements.count }

    mutating func insert(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard isAbove(elements[child], elements[parent]) else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeTop() {
        guard !elements.isEmpty else { return }
        elements.swapAt(0, elements.count - 1)
        elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var top = parent
            if left < elements.count, isAbove(elements[left], elements[top]) { top = left }
            if right < elements.count, isAbove(elements[right], elements[top]) { top = right }
            guard top != parent else { return }
            elements.swapAt(parent, top)
            parent = top
        }
    }
}
