#include "common/shared_names.h"

#include "common/mutex.h"

namespace rdmahd {

std::shared_ptr<const NameList> ShareNames(NameList names) {
  // A handful of drivers and folder kinds per node: a short list searched in full is enough, and
  // bounds what a host with many distinct listings can make this keep.
  constexpr std::size_t kRemembered = 32;
  static Mutex mu;
  static std::vector<std::weak_ptr<const NameList>> recent GUARDED_BY(mu);  // newest last
  MutexLock lock(mu);
  std::erase_if(recent, [](const auto& w) { return w.expired(); });
  for (const auto& w : recent) {
    if (auto list = w.lock(); list && *list == names) return list;
  }
  auto list = std::make_shared<const NameList>(std::move(names));
  if (recent.size() == kRemembered) recent.erase(recent.begin());
  recent.push_back(list);
  return list;
}

}  // namespace rdmahd
