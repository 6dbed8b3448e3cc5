// The app shell; replaced by the chat, threads and agents work.
import { SidePanel } from "./panels/SidePanel";

export function App() {
  return <main><SidePanel /></main>;
}
